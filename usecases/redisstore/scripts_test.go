package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// TestScriptsRefuseNonPositiveTTL: a script given a TTL argument of 0 or a
// negative (which the Go side never sends) fails whole before any write,
// as store.ErrInvalidArgument: never a key without a TTL ("forever"),
// never a PEXPIRE 0 that deletes one.
func TestScriptsRefuseNonPositiveTTL(t *testing.T) {
	srv := redisserver.Start(t)
	b, err := New(Config{Client: srv.Client(t), Prefix: "ttl:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := b.key("{k}")
	ks := []string{k, b.counter(k)}
	lk, lf := b.key("lease:{l}"), b.key("lease:{l}:fence")
	for _, ttl := range []string{"0", "-1", "-5", "0.5", "x"} {
		for _, c := range []struct {
			name string
			run  func() (any, error)
		}{
			{"set", func() (any, error) { return b.run(ctx, setScript, ks, "v", ttl, "0", "0") }},
			{"set if absent", func() (any, error) { return b.run(ctx, setScript, ks, "v", ttl, "1", "0") }},
			{"token bucket interval", func() (any, error) { return b.run(ctx, tokenBucketScript, ks, "5", ttl, "1") }},
			{"fixed window", func() (any, error) { return b.run(ctx, fixedWindowScript, ks, "5", ttl, "1") }},
			{"sliding window", func() (any, error) { return b.run(ctx, slidingWindowScript, ks, "5", "1000", "1", ttl) }},
			{"idempotency lease", func() (any, error) { return b.run(ctx, idempotencyScript, ks, "claim", "fp", "A", ttl, "1000", "") }},
			{"idempotency retention", func() (any, error) { return b.run(ctx, idempotencyScript, ks, "claim", "fp", "A", "1000", ttl, "") }},
			{"lease acquire", func() (any, error) {
				return b.run(ctx, leaseScript, []string{lk, lf, b.counter(lk)}, "acquire", "A", "0", ttl, "0")
			}},
		} {
			if _, err := c.run(); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%s with ttl %q: got %v, want ErrInvalidArgument", c.name, ttl, err)
			}
			for _, key := range []string{k, lk, lf} {
				if n, _ := b.c.Exists(ctx, key).Result(); n != 0 {
					t.Errorf("%s with ttl %q: wrote %q", c.name, ttl, key)
					b.c.Del(ctx, key)
				}
			}
		}
	}
	// Renew of a live lease with a bad TTL leaves it as it was (PEXPIRE 0
	// would delete it).
	lks := []string{lk, lf, b.counter(lk)}
	if _, err := b.run(ctx, leaseScript, lks, "acquire", "A", "0", "60000", "0"); err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []string{"0", "-1"} {
		if _, err := b.run(ctx, leaseScript, lks, "renew", "A", "1", ttl, "0"); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("lease renew with ttl %q: got %v, want ErrInvalidArgument", ttl, err)
		}
		if p, _ := b.c.PTTL(ctx, lk).Result(); p <= 0 {
			t.Errorf("lease renew with ttl %q: lease PTTL %v, want it kept", ttl, p)
		}
	}
	// No TTL is said with "none", on Set only.
	if _, err := b.run(ctx, setScript, ks, "v", "none", "0", "0"); err != nil {
		t.Fatalf("set with no TTL: %v", err)
	}
	if p, _ := b.c.PTTL(ctx, k).Result(); p != -1 {
		t.Errorf("set with no TTL: PTTL %v, want -1 (none)", p)
	}
}
