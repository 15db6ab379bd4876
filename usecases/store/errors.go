package store

import (
	"errors"

	"github.com/tidekv/tide/engine"
)

// Sentinel errors. Backends return these (possibly wrapped with detail);
// check them with errors.Is. The engine's sentinels are reused so that an
// error from the embedded backend and one from a remote backend compare
// equal.
var (
	// ErrNotInteger reports Incr on a value that is not a base-10 int64.
	ErrNotInteger = engine.ErrNotInteger
	// ErrOverflow reports an Incr whose result would not fit in an int64.
	ErrOverflow = engine.ErrOverflow
	// ErrInvalidTTL reports a negative TTL or one that overflows the clock.
	ErrInvalidTTL = engine.ErrInvalidTTL
	// ErrInvalidOptions reports contradictory SetOptions.
	ErrInvalidOptions = engine.ErrInvalidOptions
	// ErrKeyTooLarge reports a key longer than the backend accepts.
	ErrKeyTooLarge = engine.ErrKeyTooLarge
	// ErrTooLarge reports a value that can never fit.
	ErrTooLarge = engine.ErrTooLarge
	// ErrOutOfMemory reports a write refused for lack of room.
	ErrOutOfMemory = engine.ErrOutOfMemory
	// ErrClosed reports an operation on a closed backend.
	ErrClosed = engine.ErrClosed

	// ErrInvalidArgument reports a decision with nonsense parameters (a
	// zero capacity, a non-positive interval, an unknown op). Nothing
	// changed.
	ErrInvalidArgument = errors.New("tide: invalid argument")
	// ErrUnsupported reports a decision the backend does not implement.
	ErrUnsupported = errors.New("tide: decision not supported by this backend")
	// ErrCorrupt reports a stored value a decision or DecodeLog cannot
	// parse (a key written by something else).
	ErrCorrupt = errors.New("tide: corrupt stored value")
	// ErrUnavailable reports a backend that cannot be reached. Remote
	// backends wrap their transport errors with it so that callers can
	// tell "the store failed" from "the store said no".
	ErrUnavailable = errors.New("tide: store unavailable")
)
