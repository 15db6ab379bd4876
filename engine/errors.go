package engine

import "errors"

// Sentinel errors. Check them with errors.Is: the engine may wrap them with
// detail (for example the name of an invalid Config field).
var (
	// ErrNotFound reports a missing key where a miss is an error.
	ErrNotFound = errors.New("tide: key not found")
	// ErrKeyTooLarge reports a key longer than Config.MaxKeySize.
	ErrKeyTooLarge = errors.New("tide: key too large")
	// ErrTooLarge reports an entry that can never fit: key + value over
	// MaxEntrySize, or key + value + EntryOverhead over Config.MaxBytes.
	ErrTooLarge = errors.New("tide: entry too large")
	// ErrInvalidTTL reports a TTL ≤ 0 on a write, or a deadline that
	// overflows the clock (past the year 2262).
	ErrInvalidTTL = errors.New("tide: invalid TTL")
	// ErrOutOfMemory reports a write that needs room when nothing may be
	// evicted (noeviction, every entry pinned, or a volatile policy with no
	// TTL keys). The write changed nothing.
	ErrOutOfMemory = errors.New("tide: out of memory")
	// ErrNotInteger reports a counter operation on a value that is not a
	// base-10 int64 in canonical form.
	ErrNotInteger = errors.New("tide: value is not an integer")
	// ErrOverflow reports a counter operation whose result would not fit in
	// an int64. The value is unchanged.
	ErrOverflow = errors.New("tide: increment or decrement would overflow")
	// ErrVersionMismatch reports a conditional write whose expected version
	// was not the key's current version.
	ErrVersionMismatch = errors.New("tide: version mismatch")
	// ErrClosed reports an operation on a closed engine.
	ErrClosed = errors.New("tide: engine closed")
	// ErrInvalidConfig reports a Config field with a nonsense value; the
	// wrapping error names the field.
	ErrInvalidConfig = errors.New("tide: invalid config")
	// ErrInvalidOptions reports contradictory write options (for example a
	// TTL together with KeepTTL).
	ErrInvalidOptions = errors.New("tide: invalid options")
)
