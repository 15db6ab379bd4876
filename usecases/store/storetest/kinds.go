package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// runKinds checks that a key written by one kind of decision (or by Set or
// FlagWrite) is never read by a decision of another kind as its own state:
// two limiters of different algorithms that end up on one key, or a lease
// on a key an idempotency record holds, must see ErrCorrupt, not a
// silently wrong answer.
func runKinds(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	type kind struct {
		name  string
		write func(b store.Backend, key string) error
	}
	u := time.Second
	kinds := []kind{
		{"TokenBucket", func(b store.Backend, key string) error {
			return b.TokenBucket(ctx, &store.TokenBucket{Key: key, Capacity: 100, Interval: u, Cost: 1})
		}},
		{"FixedWindow", func(b store.Backend, key string) error {
			return b.FixedWindow(ctx, &store.FixedWindow{Key: key, Limit: 100, Window: 100 * u, Cost: 1})
		}},
		{"SlidingWindow", func(b store.Backend, key string) error {
			return b.SlidingWindow(ctx, &store.SlidingWindow{Key: key, Limit: 100, Window: 100 * u, Cost: 1})
		}},
		{"Lease", func(b store.Backend, key string) error {
			return b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: key, FenceKey: key + ":fence", Holder: "holder", TTL: 100 * u})
		}},
		{"Idempotency", func(b store.Backend, key string) error {
			return b.Idempotency(ctx, &store.Idempotency{Op: store.IdemClaim, Key: key, Fingerprint: []byte("fingerprint"), Owner: "owner", Lease: 10 * u, Retention: 100 * u})
		}},
	}
	// Set and FlagWrite write values of the caller's choosing: here, ones
	// long enough for any record's header.
	writers := append([]kind{
		{"Set", func(b store.Backend, key string) error {
			_, _, err := b.Set(ctx, key, []byte("a value written by Set"), store.SetOptions{TTL: 100 * u})
			return err
		}},
		{"FlagWrite", func(b store.Backend, key string) error {
			return b.FlagWrite(ctx, &store.FlagWrite{Key: key, Value: []byte(`{"enabled":true,"rollout":50}`), AuditKey: key + ":audit", Audit: []byte("created")})
		}},
	}, kinds...)
	for _, w := range writers {
		for _, r := range kinds {
			if w.name == r.name {
				continue
			}
			t.Run(w.name+"Then"+r.name, func(t *testing.T) {
				f := newFixture(t)
				if err := w.write(f.Backend, "{k}"); err != nil {
					t.Fatalf("%s: %v", w.name, err)
				}
				before, _, berr := f.Backend.Get(ctx, "{k}")
				if err := r.write(f.Backend, "{k}"); !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("%s on a key holding %s state: got %v, want ErrCorrupt", r.name, w.name, err)
				}
				// Get may itself refuse a decision's key (Redis: ErrCorrupt);
				// whatever it says must not have changed.
				after, _, aerr := f.Backend.Get(ctx, "{k}")
				if !bytes.Equal(after.Value, before.Value) || after.Version != before.Version || (aerr == nil) != (berr == nil) {
					t.Errorf("%s on a key holding %s state changed it: got (%q, v%d, %v), want (%q, v%d, %v)", r.name, w.name, after.Value, after.Version, aerr, before.Value, before.Version, berr)
				}
				if r.name == "Lease" {
					if _, found, _ := f.Backend.Get(ctx, "{k}:fence"); found {
						t.Errorf("Lease on a key holding %s state wrote its fence key", w.name)
					}
				}
			})
		}
	}
}
