package cache

import "errors"

var (
	// ErrInvalidConfig reports a Config field with a nonsense value.
	ErrInvalidConfig = errors.New("tide: invalid cache config")
)

// PanicError reports a load function that panicked.
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return "tide: cache load panicked" }
