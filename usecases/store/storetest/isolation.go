package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/session"
)

// aliasesOf returns short keys an adversary could choose to alias long,
// under the hashing schemes adapters have used for keys over 256 bytes.
func aliasesOf(long string) []string {
	sum := sha256.Sum256([]byte(long))
	h := hex.EncodeToString(sum[:])
	return []string{"sha256:" + h, "h:" + h, h}
}

// runRateLimitIsolation checks that limiters sharing a backend never share
// state unless they are the same limit, and that no key aliases another.
func runRateLimitIsolation(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	newLimiter := func(t *testing.T, cfg ratelimit.Config) *ratelimit.Limiter {
		t.Helper()
		l, err := ratelimit.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	t.Run("LimitersDoNotCollide", func(t *testing.T) {
		f := newFixture(t)
		api := newLimiter(t, ratelimit.Config{Name: "api", Backend: f.Backend, Algorithm: ratelimit.FixedWindow, Limit: 100, Period: time.Minute})
		login := newLimiter(t, ratelimit.Config{Name: "login", Backend: f.Backend, Algorithm: ratelimit.TokenBucket, Limit: 5, Period: time.Minute})
		search := newLimiter(t, ratelimit.Config{Name: "search", Backend: f.Backend, Algorithm: ratelimit.FixedWindow, Limit: 1, Period: time.Minute})
		apiSW := newLimiter(t, ratelimit.Config{Name: "api", Backend: f.Backend, Algorithm: ratelimit.SlidingWindow, Limit: 1, Period: time.Minute})
		const ip = "203.0.113.7"
		for _, l := range []*ratelimit.Limiter{login, search, apiSW} {
			if r, err := l.Allow(ctx, ip); !r.Allowed || err != nil {
				t.Fatalf("first event of %s: got (%+v, %v), want allowed", l.Config().Name, r, err)
			}
		}
		search.Allow(ctx, ip) // exhausts search
		apiSW.Allow(ctx, ip)  // exhausts the sliding "api"
		r, err := api.Allow(ctx, ip)
		if !r.Allowed || r.Remaining != 99 || err != nil {
			t.Errorf("api after other limiters saw the same client: got (allowed %v, remaining %d, retry %v, %v), want (true, 99, 0, nil)",
				r.Allowed, r.Remaining, r.RetryAfter, err)
		}
	})
	t.Run("LongKeysDoNotAlias", func(t *testing.T) {
		f := newFixture(t)
		for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingWindow} {
			l := newLimiter(t, ratelimit.Config{Name: "n", Backend: f.Backend, Algorithm: alg, Limit: 1, Period: time.Minute})
			long := strings.Repeat("x", 300)
			if r, _ := l.Allow(ctx, long); !r.Allowed {
				t.Fatalf("%v: first event of the long key denied", alg)
			}
			if r, _ := l.Allow(ctx, long); r.Allowed {
				t.Fatalf("%v: the long key is not limited", alg)
			}
			for _, short := range aliasesOf(long) {
				if r, err := l.Allow(ctx, short); !r.Allowed || err != nil {
					t.Errorf("%v: short key %q shares the long key's budget: got (%v, %v), want allowed", alg, short, r.Allowed, err)
				}
			}
		}
	})
}

// RunConfigLimits checks that every adapter refuses, at construction,
// durations at their type's limit that no backend can store (accepting
// them fails every later call: a FailOpen limiter then admits everything).
func RunConfigLimits(t *testing.T, newFixture NewFunc) {
	f := newFixture(t)
	b := f.Backend
	const huge = time.Duration(math.MaxInt64)
	load := func(context.Context, string) ([]byte, bool, error) { return nil, false, nil }
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"ratelimit fixed window Period", second(ratelimit.New(ratelimit.Config{Name: "n", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 1, Period: huge, OnStoreError: ratelimit.FailOpen})), ratelimit.ErrInvalidConfig},
		{"ratelimit sliding window Period", second(ratelimit.New(ratelimit.Config{Name: "n", Backend: b, Algorithm: ratelimit.SlidingWindow, Limit: 1, Period: huge})), ratelimit.ErrInvalidConfig},
		{"ratelimit token bucket Burst × interval", second(ratelimit.New(ratelimit.Config{Name: "n", Backend: b, Limit: 1, Period: huge / 2, Burst: 2})), ratelimit.ErrInvalidConfig},
		{"cache TTL", second(cache.New(cache.Config{Name: "n", Backend: b, Load: load, TTL: huge})), cache.ErrInvalidConfig},
		{"session IdleTimeout", second(session.New(session.Config{Backend: b, IdleTimeout: huge, AbsoluteTimeout: huge})), session.ErrInvalidConfig},
		{"session AbsoluteTimeout", second(session.New(session.Config{Backend: b, AbsoluteTimeout: huge})), session.ErrInvalidConfig},
		{"idempotency Retention", second(idempotency.New(idempotency.Config{Backend: b, Retention: huge})), idempotency.ErrInvalidConfig},
		{"idempotency Lease", second(idempotency.New(idempotency.Config{Backend: b, Lease: huge, Retention: huge})), idempotency.ErrInvalidConfig},
		{"lease TTL", second(lease.New(lease.Config{Backend: b, TTL: huge})), lease.ErrInvalidConfig},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s = MaxInt64: got %v, want %v", c.name, c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }
