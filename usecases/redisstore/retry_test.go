package redisstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// TestNoDoubleApply: a decision whose reply times out is reported as
// ErrUnavailable and never re-sent, even by a client configured to retry:
// when the hung server resumes it applies the decision exactly once.
func TestNoDoubleApply(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 300 * time.Millisecond, MaxRetries: 3})
	t.Cleanup(func() { c.Close() })
	b, _ := redisstore.New(redisstore.Config{Client: c})
	d := &store.FixedWindow{Key: "fw", Limit: 100, Window: time.Hour, Cost: 1}
	if err := b.FixedWindow(ctx, d); err != nil || !d.Allowed {
		t.Fatalf("first admission: got (%v, %v)", d.Allowed, err)
	}
	// Open several connections, so that a retry would find a ready one and
	// reach the (hung) server rather than fail to connect.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); c.Ping(ctx) }()
	}
	wg.Wait()
	srv.Pause()
	err := b.FixedWindow(ctx, d)
	srv.Resume()
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("decision against a hung server: got %v, want ErrUnavailable", err)
	}
	time.Sleep(100 * time.Millisecond) // the server runs what it had queued
	it, ok, err := b.Get(ctx, "fw")
	if err != nil || !ok || string(it.Value) != "2" {
		t.Fatalf("counter after one timed-out admission: got (%q, %v, %v), want \"2\" (applied once, never retried)", it.Value, ok, err)
	}
}

// TestVersionsNeverReused: versions stay fresh across the loss of the
// version counters (FLUSHALL, as after a restart without persistence).
func TestVersionsNeverReused(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	c := srv.Client(t)
	b, _ := redisstore.New(redisstore.Config{Client: c})
	seen := map[uint64]bool{}
	for round := range 3 {
		for range 50 {
			v, _, err := b.Set(ctx, "k", []byte("v"), store.SetOptions{TTL: store.NoTTL})
			if err != nil {
				t.Fatal(err)
			}
			if seen[v] {
				t.Fatalf("round %d: version %d issued twice for one key", round, v)
			}
			seen[v] = true
		}
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
