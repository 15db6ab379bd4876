package idempotency

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrInvalidConfig reports a Config field with a nonsense value.
	ErrInvalidConfig = errors.New("tide: invalid idempotency config")
	// ErrMismatch reports a key reused with a different request payload.
	ErrMismatch = errors.New("tide: idempotency key reused with a different request")
	// ErrInProgress reports a duplicate of a request that is still being
	// executed; the error is an *InProgressError with a retry hint.
	ErrInProgress = errors.New("tide: request in progress")
	// ErrNotOwner reports Complete or Release by a caller whose claim was
	// taken over (its lease lapsed and another attempt recovered it).
	ErrNotOwner = errors.New("tide: idempotency claim not owned")
	// ErrNotFound reports Complete or Release of a key with no record (its
	// retention elapsed, or it was released).
	ErrNotFound = errors.New("tide: idempotency record not found")
	// ErrNeedsRecovery reports a claim whose previous owner died before
	// completing, when no Config.Recover hook is set: the side effect may
	// have happened, so Do refuses to re-run it blindly.
	ErrNeedsRecovery = errors.New("tide: idempotency claim needs recovery")
	// ErrFailed is wrapped by the error replayed for a request whose
	// recorded outcome is a permanent failure (see Permanent).
	ErrFailed = errors.New("tide: request failed")
	// ErrCompletedElsewhere reports a completion the store ignored because
	// the key was already completed (by an attempt that took the claim
	// over): the earlier outcome is the one replayed.
	ErrCompletedElsewhere = errors.New("tide: idempotency key already completed")
	// ErrInvalidKey reports an empty idempotency key.
	ErrInvalidKey = errors.New("tide: invalid idempotency key")
)

// InProgressError is returned for a duplicate while the first attempt runs.
type InProgressError struct {
	// RetryAfter is when the current claim's lease lapses: retry then.
	RetryAfter time.Duration
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%v: retry after %v", ErrInProgress, e.RetryAfter)
}

// Unwrap makes errors.Is(err, ErrInProgress) hold.
func (e *InProgressError) Unwrap() error { return ErrInProgress }

// permanent marks a failure to be recorded and replayed.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err, returned by a Do function, as a final outcome: it is
// recorded and every duplicate gets it back (wrapping ErrFailed) instead of
// executing again. Errors not so marked release the claim, so a retry
// executes again (use them for failures before any side effect).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}
