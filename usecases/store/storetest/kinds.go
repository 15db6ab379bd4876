package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// runKinds checks that a key written by one kind of decision (or by Set) is
// never read by a decision of another kind as its own state: two limiters
// of different algorithms that end up on one key must see ErrCorrupt, not a
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
	}
	writers := append([]kind{{"Set", func(b store.Backend, key string) error {
		_, _, err := b.Set(ctx, key, []byte("5"), store.SetOptions{TTL: 100 * u})
		return err
	}}}, kinds...)
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
				if err := r.write(f.Backend, "{k}"); !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("%s on a key holding %s state: got %v, want ErrCorrupt", r.name, w.name, err)
				}
			})
		}
	}
}
