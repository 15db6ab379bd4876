package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// cancelling is a backend whose token-bucket call fails because the
// caller's context ends during the round trip, as a remote client's does.
type cancelling struct {
	ratelimit.Backend
	cancel context.CancelFunc
}

func (c *cancelling) TokenBucket(ctx context.Context, d *store.TokenBucket) error {
	c.cancel()
	return ctx.Err()
}

// A WaitN whose context ends during the store call returns the context's
// error, also on a limiter that fails open: a cancelled wait is not a store
// failure, and not an admission.
func TestWaitCancelledDuringTheDecisionIsNotAdmitted(t *testing.T) {
	for _, mode := range []ratelimit.FailureMode{ratelimit.FailOpen, ratelimit.FailClosed} {
		b, _ := storetest.NewEmbedded(t)
		ctx, cancel := context.WithCancel(context.Background())
		l, _ := ratelimit.New(ratelimit.Config{Name: "jobs", Backend: &cancelling{Backend: b, cancel: cancel}, Limit: 1, Period: time.Hour, OnStoreError: mode})
		if err := l.Wait(ctx, "k"); !errors.Is(err, context.Canceled) {
			t.Errorf("mode %d: Wait cancelled during the decision: got %v, want context.Canceled", mode, err)
		}
	}
}
