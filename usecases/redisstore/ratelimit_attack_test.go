package redisstore_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
)

// A limiter configuration New accepts works on Redis: it is not refused
// by the backend at every call (which a FailClosed limiter answers by
// denying everything, and a FailOpen one by admitting everything).
func TestRateLimitConfigsAcceptedWork(t *testing.T) {
	t.Parallel()
	srv := redisserver.Start(t)
	b, err := redisstore.New(redisstore.Config{Client: srv.Client(t), Prefix: "cfg:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		name string
		cfg  ratelimit.Config
	}{
		{"fixed window Limit MaxInt64", ratelimit.Config{Algorithm: ratelimit.FixedWindow, Limit: math.MaxInt64, Period: time.Minute}},
		{"fixed window Limit 2^53", ratelimit.Config{Algorithm: ratelimit.FixedWindow, Limit: 1 << 53, Period: time.Minute}},
		{"token bucket 1e16 per 1e16 ns", ratelimit.Config{Limit: 1e16, Period: 1e16}},
		{"token bucket Burst × interval rounded up to µs", ratelimit.Config{Limit: 3e15, Period: 3e15 * 1001}},
	}
	for i, c := range cases {
		c.cfg.Backend, c.cfg.Name = b, "cfg"+string(rune('a'+i))
		l, err := ratelimit.New(c.cfg)
		if err != nil {
			continue // refused at construction: fine
		}
		if r, err := l.Allow(ctx, "k"); err != nil || !r.Allowed {
			t.Errorf("%s: New accepted it, then Allow = (%+v, %v); want admitted, or ErrInvalidConfig from New", c.name, r, err)
		}
	}
}

// A key the backend refuses as too long never escapes its limit, even on
// a limiter that fails open: such a refusal is not a store failure, and an
// attacker chooses the key.
func TestRateLimitKeyTooLongForTheBackendIsNotAdmitted(t *testing.T) {
	t.Parallel()
	srv := redisserver.Start(t)
	b, err := redisstore.New(redisstore.Config{Client: srv.Client(t), Prefix: "klen:", MaxKeyLen: 128})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 2, Period: time.Hour, OnStoreError: ratelimit.FailOpen})
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("x", 200) // under the 256 bytes the limiter hashes
	admitted := 0
	for range 10 {
		if r, _ := l.Allow(context.Background(), key); r.Allowed {
			admitted++
		}
	}
	if admitted > 2 {
		t.Fatalf("admitted %d of 10 under a limit of 2 with a key the backend refuses; want at most 2", admitted)
	}
}
