// Package kverr holds the sentinel errors shared by tide's engine and the
// stores behind its use-case adapters (the embedded one and Redis), so that
// the same condition is the same error value whichever backend reports it,
// and so that code written against the store seam need not link the engine
// to compare errors. It is a leaf: it imports only the standard library.
//
// Check these with errors.Is; they are wrapped with detail.
package kverr

import "errors"

var (
	// ErrKeyTooLarge reports a key longer than the store accepts.
	ErrKeyTooLarge = errors.New("tide: key too large")
	// ErrTooLarge reports an entry that can never fit.
	ErrTooLarge = errors.New("tide: entry too large")
	// ErrInvalidTTL reports a negative TTL, or one whose deadline
	// overflows the clock.
	ErrInvalidTTL = errors.New("tide: invalid TTL")
	// ErrInvalidOptions reports contradictory write options (a TTL
	// together with KeepTTL, a version condition on a create).
	ErrInvalidOptions = errors.New("tide: invalid options")
	// ErrOutOfMemory reports a write refused for lack of room; it changed
	// nothing.
	ErrOutOfMemory = errors.New("tide: out of memory")
	// ErrOverflow reports a counter whose next value would not fit (a
	// fencing token); the value is unchanged.
	ErrOverflow = errors.New("tide: counter would overflow")
	// ErrClosed reports an operation on a closed store.
	ErrClosed = errors.New("tide: store closed")
)
