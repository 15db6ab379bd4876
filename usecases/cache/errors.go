package cache

import "errors"

var (
	// ErrInvalidConfig reports a Config field with a nonsense value.
	ErrInvalidConfig = errors.New("tide: invalid cache config")
)
