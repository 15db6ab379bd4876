package ratelimit_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// TestEventsCountEveryDecision: allowed, denied and store failures are
// each counted once per decision, for every algorithm.
func TestEventsCountEveryDecision(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			b, _ := storetest.NewEmbedded(t)
			flaky := &storetest.Flaky{Backend: b}
			l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: flaky, Algorithm: alg, Limit: 3, Burst: 3, Period: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for range 5 { // 3 allowed, 2 denied
				if _, err := l.Allow(ctx, "10.0.0.1"); err != nil {
					t.Fatal(err)
				}
			}
			flaky.Down.Store(true)
			if _, err := l.Allow(ctx, "10.0.0.1"); err == nil {
				t.Fatal("Allow with the store down: got nil error")
			}
			if _, err := l.AllowN(ctx, "10.0.0.1", 99); err == nil { // refused before the store: not a decision
				t.Fatal("AllowN over the limit: got nil error")
			}
			got := maps.Collect(l.Events())
			want := map[string]uint64{"allowed": 3, "denied": 2, "store_error": 1}
			if !maps.Equal(got, want) {
				t.Errorf("Events = %v, want %v", got, want)
			}
		})
	}
}
