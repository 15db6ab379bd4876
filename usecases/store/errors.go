package store

import (
	"errors"

	"github.com/tidekv/tide/kverr"
)

// Sentinel errors. Backends return these (possibly wrapped with detail);
// check them with errors.Is. Those a store shares with the engine are
// package kverr's, so that an error from the embedded backend and one from
// a remote backend compare equal without this package linking the engine.
var (
	// ErrInvalidTTL reports a write TTL that is neither positive nor NoTTL
	// (0 included), or one longer than MaxTTL. Set's errors for such a TTL
	// also match ErrInvalidArgument.
	ErrInvalidTTL = kverr.ErrInvalidTTL
	// ErrInvalidOptions reports contradictory SetOptions.
	ErrInvalidOptions = kverr.ErrInvalidOptions
	// ErrKeyTooLarge reports a key longer than the backend accepts, given
	// to Set or to any decision (one that would write nothing, an
	// inspection or a peek, included: its answer would be about a key
	// that cannot exist). Get, Delete and CompareAndDelete of such a key
	// report a miss (false, nil).
	ErrKeyTooLarge = kverr.ErrKeyTooLarge
	// ErrTooLarge reports a value that can never fit.
	ErrTooLarge = kverr.ErrTooLarge
	// ErrOutOfMemory reports a write refused for lack of room.
	ErrOutOfMemory = kverr.ErrOutOfMemory
	// ErrOverflow reports a lease's fencing token that would overflow.
	ErrOverflow = kverr.ErrOverflow
	// ErrClosed reports an operation on a closed backend.
	ErrClosed = kverr.ErrClosed

	// ErrInvalidArgument reports a call with nonsense parameters (a zero
	// capacity, a non-positive interval, a TTL of 0, an unknown op).
	// Nothing changed.
	ErrInvalidArgument = errors.New("tide: invalid argument")
	// ErrCorrupt reports a stored value a decision or DecodeLog cannot
	// parse (a key written by something else, or by another kind of
	// decision).
	ErrCorrupt = errors.New("tide: corrupt stored value")
	// ErrUnavailable reports a backend that cannot be reached. Remote
	// backends wrap their transport errors with it so that callers can
	// tell "the store failed" from "the store said no".
	ErrUnavailable = errors.New("tide: store unavailable")
)
