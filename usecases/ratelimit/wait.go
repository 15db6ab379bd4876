package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// minWait is the least Wait sleeps between two decisions, so that a store
// answering RetryAfter 0 for a denial cannot make it spin.
const minWait = time.Millisecond

// Wait is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks until n events for key are admitted (and recorded), as
// x/time/rate's WaitN does, for workers that should slow down rather than
// drop work. It returns:
//
//   - nil once admitted; also when the store failed and the limiter fails
//     open (the failure is reported to Config.Logger and Config.OnError);
//   - ctx's error if ctx is done first, also when it ends during a store
//     call that fails (on a limiter that fails open too: the wait is not
//     admitted);
//   - an error wrapping ErrWaitExceedsDeadline, at once and without
//     sleeping, if the wait the limiter asks for would end after ctx's
//     deadline;
//   - an error wrapping ErrInvalidCost for n < 0 or n above the limit;
//   - an error wrapping ErrStore if the store failed and the limiter
//     fails closed, or the store refused the request as invalid or found
//     the key's record corrupt (see AllowN).
//
// Each attempt is one AllowN; a denial's RetryAfter is how long it sleeps
// before the next. Waiters are not queued: under contention another
// caller may take the freed quota first, and WaitN then waits again, so
// no caller is promised a place, only that nothing exceeds the limit.
func (l *Limiter) WaitN(ctx context.Context, key string, n int64) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := l.AllowN(ctx, key, n)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err() // ended during the call: neither admitted nor a store failure
		case err != nil && r.Allowed:
			return nil // fail open, reported by AllowN
		case err != nil:
			return err
		case r.Allowed:
			return nil
		}
		d := max(r.RetryAfter, minWait)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
			return fmt.Errorf("%w: key needs %v", ErrWaitExceedsDeadline, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.after(d):
		}
	}
}

// after is time.After, replaced in tests.
func (l *Limiter) after(d time.Duration) <-chan time.Time {
	if l.afterFunc != nil {
		return l.afterFunc(d)
	}
	t := time.NewTimer(d)
	return t.C // the timer is collected once it fires or is unreferenced (Go ≥ 1.23)
}

// A Reservation is the outcome of Reserve: the events were either admitted
// and recorded (OK), or not, with the delay after which they could be.
//
// It has x/time/rate's shape but not its power: a store decision admits
// now or not at all, so a Reservation never holds future quota (a caller
// told to wait must ask again, and may be overtaken), and it cannot be
// cancelled (the decisions take no negative cost, so consumed quota is
// not given back). Use WaitN to wait for admission.
type Reservation struct {
	res Result
}

// OK reports whether the events were admitted and recorded.
func (r *Reservation) OK() bool { return r.res.Allowed }

// Delay returns 0 if the events were admitted, else how long until the
// same request could be admitted (a hint: nothing is held meanwhile).
func (r *Reservation) Delay() time.Duration {
	if r.res.Allowed {
		return 0
	}
	return r.res.RetryAfter
}

// Result returns the decision behind the reservation.
func (r *Reservation) Result() Result { return r.res }

// Reserve is ReserveN(ctx, key, 1).
func (l *Limiter) Reserve(ctx context.Context, key string) (*Reservation, error) {
	return l.ReserveN(ctx, key, 1)
}

// ReserveN decides n events for key now, as AllowN does, and returns the
// outcome as a Reservation (see its limits). Errors are AllowN's; on a
// store failure the Reservation holds the answer Config.OnStoreError
// chose.
func (l *Limiter) ReserveN(ctx context.Context, key string, n int64) (*Reservation, error) {
	r, err := l.AllowN(ctx, key, n)
	if errors.Is(err, ErrInvalidCost) {
		return nil, err
	}
	return &Reservation{res: r}, err
}
