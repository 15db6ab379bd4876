package aof

import (
	"errors"
	"fmt"
)

// Sentinel errors. Check them with errors.Is: the package wraps them with
// detail (the file and offset of a corruption, the cause of a failure).
var (
	// ErrCorrupt reports bytes that are not a valid log, manifest or
	// snapshot: a bad checksum, an unknown record type, trailing garbage.
	// The wrapping *CorruptError names the file and offset.
	ErrCorrupt = errors.New("tide: log corrupt")
	// ErrTruncated reports a snapshot that ends before its end marker. It
	// is also an ErrCorrupt.
	ErrTruncated = errors.New("tide: snapshot truncated")
	// ErrFailed reports a log that refuses appends after a write it could
	// not undo or a failed fsync (after which the kernel may have dropped
	// dirty pages: retrying the fsync cannot prove anything durable). The
	// wrapping error carries the first cause. Reopen the log to continue.
	ErrFailed = errors.New("tide: log failed, reopen to continue")
	// ErrClosed reports an operation on a closed log.
	ErrClosed = errors.New("tide: log closed")
	// ErrTooLarge reports a record whose encoding exceeds MaxRecordSize.
	ErrTooLarge = errors.New("tide: log record too large")
	// ErrInvalidRecord reports a record that cannot be encoded: an unknown
	// Op, a batch inside a batch, a Cause out of range.
	ErrInvalidRecord = errors.New("tide: invalid log record")
	// ErrInvalidConfig reports a Config field with a nonsense value.
	ErrInvalidConfig = errors.New("tide: invalid log config")
	// ErrLocked reports a log directory another open log (in this or
	// another process) is using: two writers would interleave their
	// appends and corrupt the log.
	ErrLocked = errors.New("tide: log directory in use")
	// ErrBusy reports a Rewrite started while another is running.
	ErrBusy = errors.New("tide: log rewrite already running")
)

// CorruptError locates a corruption. It matches ErrCorrupt with errors.Is,
// and ErrTruncated too when Truncated is set.
type CorruptError struct {
	File      string // file name inside the log directory, or "" for a stream
	Offset    int64  // byte offset of the first invalid byte (a frame start)
	Reason    string
	Truncated bool // the input ended before it was complete
}

func (e *CorruptError) Error() string {
	where := "stream"
	if e.File != "" {
		where = e.File
	}
	msg := fmt.Sprintf("tide: log corrupt: %s at offset %d: %s", where, e.Offset, e.Reason)
	if e.Truncated {
		msg += " (truncated)"
	}
	return msg
}

// Is reports whether target is ErrCorrupt (or ErrTruncated for a truncated
// input).
func (e *CorruptError) Is(target error) bool {
	return target == ErrCorrupt || (e.Truncated && target == ErrTruncated)
}

// errShortWrite reports a write that wrote less than asked without an error.
var errShortWrite = errors.New("short write")
