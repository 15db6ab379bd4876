package cas

import "errors"

var (
	// ErrConflict reports that an update or transaction lost the race on
	// every attempt: its keys kept changing under it.
	ErrConflict = errors.New("tide: too many conflicting attempts")
	// ErrAbort may be returned by an update or transaction function to stop
	// without writing; Update and Transact return it (wrapped or not) as is.
	ErrAbort = errors.New("tide: aborted")
)
