package cache

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidConfig reports a Config field with a nonsense value.
	ErrInvalidConfig = errors.New("tide: invalid cache config")
	// ErrNoLoader reports a Get or GetMany without a loader: Config.Load
	// is nil and the call brought none.
	ErrNoLoader = errors.New("tide: cache has no loader")
	// ErrReentrantLoad reports a load that waits for itself: a loader (or
	// a Group function) that asks, with the context it was given, for the
	// key it is loading.
	ErrReentrantLoad = errors.New("tide: cache load re-entered for its own key")
	// ErrLoadExited reports a load whose goroutine exited without
	// returning (runtime.Goexit): its waiters get it instead of waiting
	// forever.
	ErrLoadExited = errors.New("tide: cache load exited without returning")
)

// PanicError reports a load function that panicked: Value is what it
// panicked with, Stack the goroutine's stack at the panic (for the log;
// the error's text carries only Value).
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("tide: cache load panicked: %v", e.Value) }
