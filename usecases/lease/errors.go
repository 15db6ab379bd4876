package lease

import "errors"

var (
	// ErrInvalidConfig reports a Config field with a nonsense value.
	ErrInvalidConfig = errors.New("tide: invalid lease config")
	// ErrInvalidName reports an empty lease name or holder.
	ErrInvalidName = errors.New("tide: invalid lease name or holder")
	// ErrStaleToken reports a fencing token older than the highest a
	// Resource has accepted: the writer's lease was superseded.
	ErrStaleToken = errors.New("tide: stale fencing token")
)
