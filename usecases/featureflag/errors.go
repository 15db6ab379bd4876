package featureflag

import "errors"

var (
	// ErrInvalidConfig reports a Config field with a nonsense value.
	ErrInvalidConfig = errors.New("tide: invalid flag config")
	// ErrNotFound reports a flag that does not exist.
	ErrNotFound = errors.New("tide: flag not found")
	// ErrExists reports Create of a flag that exists.
	ErrExists = errors.New("tide: flag exists")
	// ErrConflict reports a write based on a stale read: the flag changed
	// since. Nothing was written; re-read and decide again.
	ErrConflict = errors.New("tide: flag changed concurrently")
	// ErrInvalidFlag reports an empty name, a rollout outside 0..10000, an
	// unknown revision to roll back to, or an Update of a Flag not read
	// from the store or whose Name or Revision was changed.
	ErrInvalidFlag = errors.New("tide: invalid flag")
	// ErrWatcherPanic is reported (Config.Logger, Config.OnError) for a
	// watcher that panicked on the poller goroutine; the poller recovers
	// and goes on.
	ErrWatcherPanic = errors.New("tide: flag watcher panicked")
	// ErrClosed reports a Watch on a closed Store.
	ErrClosed = errors.New("tide: flag store closed")
)
