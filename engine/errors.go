package engine

import "errors"

// Sentinel errors. Check them with errors.Is: the engine may wrap them with
// detail (for example the name of an invalid Config field).
var (
	// ErrKeyTooLarge reports a key longer than Config.MaxKeySize.
	ErrKeyTooLarge = errors.New("tide: key too large")
	// ErrTooLarge reports an entry that can never fit: key + value over
	// MaxEntrySize, or key + value + EntryOverhead over Config.MaxBytes.
	ErrTooLarge = errors.New("tide: entry too large")
	// ErrInvalidTTL reports a TTL the rule of "Contract" in the package
	// doc refuses (0, a negative other than NoTTL, NoTTL where a duration
	// is required), or a deadline that overflows the clock (past the year
	// 2262).
	ErrInvalidTTL = errors.New("tide: invalid TTL")
	// ErrOutOfMemory reports a write that needs room when nothing may be
	// evicted (noeviction, every entry pinned, or a volatile policy with no
	// TTL keys), or whose shard's arena is full of live records (under
	// 4 GiB, the reach of its uint32 offsets; 2 GiB on 32-bit platforms).
	// The write changed nothing.
	ErrOutOfMemory = errors.New("tide: out of memory")
	// ErrNotInteger reports a counter operation on a value that is not a
	// base-10 int64 in canonical form.
	ErrNotInteger = errors.New("tide: value is not an integer")
	// ErrOverflow reports a counter operation whose result would not fit in
	// an int64. The value is unchanged.
	ErrOverflow = errors.New("tide: increment or decrement would overflow")
	// ErrClosed reports an operation on a closed engine.
	ErrClosed = errors.New("tide: engine closed")
	// ErrInvalidConfig reports a Config field with a nonsense value; the
	// wrapping error names the field.
	ErrInvalidConfig = errors.New("tide: invalid config")
	// ErrInvalidOptions reports contradictory write options (for example a
	// TTL together with KeepTTL).
	ErrInvalidOptions = errors.New("tide: invalid options")
)
