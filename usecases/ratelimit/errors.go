package ratelimit

import "errors"

var (
	// ErrInvalidConfig reports a Config field with a nonsense value; the
	// wrapping error names the field.
	ErrInvalidConfig = errors.New("tide: invalid rate limit config")
	// ErrStore wraps an error from the backend. Allow returns it together
	// with the Result that Config.OnStoreError chose.
	ErrStore = errors.New("tide: rate limit store failed")
	// ErrInvalidCost reports a negative cost, or a cost larger than the
	// limit (which could never be admitted).
	ErrInvalidCost = errors.New("tide: invalid rate limit cost")
	// ErrWaitExceedsDeadline reports a WaitN whose wait would end after
	// its context's deadline; WaitN returns it at once, without sleeping.
	ErrWaitExceedsDeadline = errors.New("tide: rate limit wait would exceed the context deadline")
)
