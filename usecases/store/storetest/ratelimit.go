package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/ratelimit"
)

// RunRateLimit runs package ratelimit's contract suite on a backend.
func RunRateLimit(t *testing.T, newFixture NewFunc) {
	newFixture = instrument(newFixture)
	ctx := context.Background()
	type step struct {
		advance   time.Duration // in units
		n         int64
		allowed   bool
		remaining int64
		retry     time.Duration // in units
		edge      bool          // lands exactly on a deadline: add Slack
	}
	cases := []struct {
		name  string
		alg   ratelimit.Algorithm
		limit int64
		burst int64
		steps []step
	}{
		{"TokenBucket", ratelimit.TokenBucket, 2, 4, []step{ // 2 per 10 units: one token per 5 units
			{0, 3, true, 1, 0, false},
			{0, 2, false, 1, 5, false},
			{0, 1, true, 0, 0, false},
			{0, 1, false, 0, 5, false},
			{5, 1, true, 0, 0, true},
			{15, 2, true, 1, 0, false},
		}},
		{"FixedWindow", ratelimit.FixedWindow, 3, 0, []step{
			{0, 1, true, 2, 0, false},
			{2, 2, true, 0, 0, false},
			{2, 1, false, 0, 6, false}, // the window ends 10 units after its first event
			{8, 1, true, 2, 0, false},
		}},
		{"SlidingWindow", ratelimit.SlidingWindow, 3, 0, []step{
			{0, 1, true, 2, 0, false},
			{2, 2, true, 0, 0, false},
			{2, 1, false, 0, 6, false}, // the first event leaves at 10
			{6, 1, true, 0, 0, true},
			{1, 1, false, 0, 1, false}, // the two at 2 leave at 12 (1 unit - Slack after the edge)
			{1, 2, true, 0, 0, true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			needTime(t, f)
			u := f.unit()
			l, err := ratelimit.New(ratelimit.Config{Name: "test", Backend: f.Backend, Algorithm: c.alg, Limit: c.limit, Burst: c.burst, Period: 10 * u})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range c.steps {
				if s.advance > 0 {
					d := s.advance * u
					if s.edge {
						d += f.Slack
					}
					f.Advance(d)
				}
				r, err := l.AllowN(ctx, "org-1", s.n)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if r.Allowed != s.allowed || r.Remaining != s.remaining {
					t.Errorf("step %d (n=%d): got allowed %v remaining %d, want %v %d", i, s.n, r.Allowed, r.Remaining, s.allowed, s.remaining)
				}
				want := s.retry * u
				if i > 0 && c.steps[i-1].edge && s.retry > 0 {
					want -= f.Slack // measured from the edge, which was Slack late
				}
				f.checkDur(t, fmt.Sprintf("step %d retry-after", i), r.RetryAfter, want)
			}
			// Another key is independent.
			if r, _ := l.Allow(ctx, "org-2"); !r.Allowed {
				t.Errorf("a different key was limited")
			}
			if err := l.Reset(ctx, "org-1"); err != nil {
				t.Fatal(err)
			}
			if r, _ := l.AllowN(ctx, "org-1", max(c.limit, c.burst)); !r.Allowed {
				t.Errorf("full allowance after Reset was denied")
			}
		})
	}
	t.Run("InvalidCost", func(t *testing.T) {
		f := newFixture(t)
		l, _ := ratelimit.New(ratelimit.Config{Name: "test", Backend: f.Backend, Limit: 5, Period: time.Minute})
		for _, n := range []int64{-1, 6} {
			if _, err := l.AllowN(ctx, "k", n); err == nil {
				t.Errorf("AllowN(%d): got nil error, want ErrInvalidCost", n)
			}
		}
	})
	// The concurrency invariants.
	t.Run("ConcurrentTokenBucket", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		u := f.unit()
		const burst, perPeriod = 20, 10
		l, _ := ratelimit.New(ratelimit.Config{Name: "test", Backend: f.Backend, Limit: perPeriod, Burst: burst, Period: 10 * u})
		var admitted atomic.Int64
		t0 := mustNow(t, f.Backend)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					r, err := l.Allow(ctx, "hot")
					if err != nil {
						t.Error(err)
						return
					}
					if r.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
		const steps = 10 // advance 10 units in total: 10 more tokens
		for range steps {
			time.Sleep(2 * time.Millisecond)
			f.Advance(u)
		}
		time.Sleep(2 * time.Millisecond)
		close(stop)
		wg.Wait()
		// On a real-time backend more time passes than was advanced: bound
		// the refill by the store's own clock.
		elapsed := mustNow(t, f.Backend).Sub(t0)
		if got, bound := admitted.Load(), int64(burst)+int64(elapsed/u)+1; got > bound || got < burst {
			t.Fatalf("admitted %d, want between the burst %d and burst + refill %d", got, burst, bound)
		}
	})
	for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindow} {
		t.Run("Concurrent"+alg.String(), func(t *testing.T) {
			f := newFixture(t)
			l, _ := ratelimit.New(ratelimit.Config{Name: "test", Backend: f.Backend, Algorithm: alg, Limit: 50, Period: 1000 * f.unit()})
			var admitted atomic.Int64
			workers(64, func(int) {
				for range 5 {
					if r, err := l.Allow(ctx, "hot"); err != nil {
						t.Error(err)
					} else if r.Allowed {
						admitted.Add(1)
					}
				}
			})
			if got := admitted.Load(); got != 50 {
				t.Fatalf("admitted %d of 320, want exactly the limit 50", got)
			}
		})
	}
	runRateLimitIsolation(t, newFixture)
}
