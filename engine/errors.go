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
	// 4 GiB, the reach of its uint32 offsets; 2 GiB on 32-bit platforms);
	// so is a TTL given to a key stored without one there (its record
	// moves to one with a deadline word). The write changed nothing.
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

	// Durability (Config.Durability).

	// ErrLogWrite reports a write whose log record could not be appended
	// (ENOSPC, EIO, a short write): the write changed nothing in memory,
	// and the log stays usable. The wrapping error carries the cause.
	ErrLogWrite = errors.New("tide: log write failed")
	// ErrLogFailed reports a log that refuses appends after a failed fsync
	// (or a write it could not cut off again): the write changed nothing
	// in memory, but after a failed fsync its record may or may not
	// survive a crash. Every later write fails the same way; reads work.
	// Reopen the engine to continue.
	ErrLogFailed = errors.New("tide: log failed, reopen the engine")
	// ErrLogCorrupt reports a log (or snapshot) that is damaged other than
	// by a torn tail: the wrapping error names the file and offset.
	// Durability.TruncateCorrupt makes New cut the log there instead.
	ErrLogCorrupt = errors.New("tide: log corrupt")
	// ErrLogLocked reports a log directory another engine (in this or
	// another process) has open.
	ErrLogLocked = errors.New("tide: log directory in use")
	// ErrLogOpen reports a log directory New could not open or replay for
	// a reason other than corruption or a lock (Dir is a file, cannot be
	// created, an I/O error): the wrapping error carries the cause.
	ErrLogOpen = errors.New("tide: log open failed")
	// ErrNoLog reports a log operation (Rewrite) on an engine without
	// Durability.Dir.
	ErrNoLog = errors.New("tide: no log configured")
	// ErrRewriteBusy reports a Rewrite started while another one runs.
	ErrRewriteBusy = errors.New("tide: log rewrite already running")
)
