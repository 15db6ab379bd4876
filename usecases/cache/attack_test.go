package cache_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// Close cancels the context of a running background refresh, so a loader
// that honours its context returns and Close does not wait for the origin.
func TestCloseCancelsRunningRefresh(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	entered := make(chan struct{})
	var loads atomic.Int64
	load := func(ctx context.Context, key string) ([]byte, bool, error) {
		if loads.Add(1) == 1 {
			return []byte("v1"), true, nil
		}
		close(entered)
		<-ctx.Done() // a slow origin call that honours cancellation
		return nil, false, ctx.Err()
	}
	c, err := cache.New(cache.Config{Name: "c", Backend: b, Load: load, TTL: 10 * time.Second, RefreshAfter: 5 * time.Second, NoJitter: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := c.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(6 * time.Second)
	if v, _, err := c.Get(ctx, "k"); string(v) != "v1" || err != nil { // starts the refresh
		t.Fatalf("aged Get: got (%q, %v), want v1", v, err)
	}
	<-entered
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second): // only on failure
		t.Fatal("Close did not cancel the running refresh's loader: it waits for the origin")
	}
}

// Invalidate on one instance fences out a load that another instance,
// sharing the backend, began before it: a Get on that other instance that
// follows the Invalidate loads afresh rather than joining the older load
// and returning its value.
func TestInvalidateOnAnotherInstanceIsNotAnsweredByAnOlderLoad(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var origin atomic.Value
	origin.Store("old")
	entered, release := make(chan struct{}), make(chan struct{})
	var loads atomic.Int64
	load := func(ctx context.Context, key string) ([]byte, bool, error) {
		v := origin.Load().(string) // what the origin says when the load begins
		if loads.Add(1) == 1 {
			close(entered)
			<-release
		}
		return []byte(v), true, nil
	}
	newCache := func() *cache.Cache {
		c, err := cache.New(cache.Config{Name: "c", Backend: b, Load: load, NoJitter: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, other := newCache(), newCache()
	ctx := context.Background()
	first := make(chan string)
	go func() { v, _, _ := other.Get(ctx, "k"); first <- string(v) }()
	<-entered // other's load began, and reads "old"
	origin.Store("new")
	if err := a.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	after := make(chan string)
	go func() { v, _, _ := other.Get(ctx, "k"); after <- string(v) }()
	var got string
	select {
	case got = <-after:
	case <-time.After(10 * time.Second): // only on failure: it joined the older load
		close(release)
		got = <-after
		<-first
		t.Fatalf("Get after another instance's Invalidate joined the load begun before it, and got %q", got)
	}
	close(release)
	<-first
	if got != "new" {
		t.Errorf("Get after another instance's Invalidate: got %q, want new", got)
	}
}

// A loader that calls back into the cache for the key it is loading (with
// the context it was given) gets an error instead of waiting for its own
// load forever.
func TestLoaderThatGetsItsOwnKeyDoesNotDeadlock(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var c *cache.Cache
	var inner error
	load := func(ctx context.Context, key string) ([]byte, bool, error) {
		_, _, inner = c.Get(ctx, key)
		return []byte("v"), true, nil
	}
	c, _ = cache.New(cache.Config{Name: "c", Backend: b, Load: load})
	done := make(chan error)
	go func() { _, _, err := c.Get(context.Background(), "k"); done <- err }()
	select {
	case err := <-done:
		if err != nil || !errors.Is(inner, cache.ErrReentrantLoad) {
			t.Errorf("outer Get: %v; the loader's own Get: %v, want ErrReentrantLoad", err, inner)
		}
	case <-time.After(10 * time.Second): // only on failure
		t.Fatal("a loader calling Get for its own key deadlocked")
	}
}

// Under concurrent Gets the counters are exact: every Get is one hit or
// one miss, and Loads equals the loader's calls.
func TestStatsExactUnderConcurrency(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var calls atomic.Uint64
	load := func(ctx context.Context, key string) ([]byte, bool, error) {
		calls.Add(1)
		return []byte(key), key != "k0", nil
	}
	c, _ := cache.New(cache.Config{Name: "c", Backend: b, Load: load})
	const workers, gets = 8, 200
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range gets {
				key := string(rune('0' + (i+w)%10))
				if _, _, err := c.Get(context.Background(), "k"+key); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range workers {
		<-done
	}
	st := c.Stats()
	if st.Hits+st.Misses != workers*gets || st.Loads != calls.Load() || st.Loads < 10 {
		t.Errorf("Stats %+v after %d Gets and %d loader calls", st, workers*gets, calls.Load())
	}
}

// GetMany with a key repeated asks the bulk loader for it once and answers
// it once.
func TestGetManyDuplicateKeysLoadOnce(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	c, _ := cache.New(cache.Config{Name: "c", Backend: b})
	var asked []string
	got, err := c.GetMany(context.Background(), []string{"a", "b", "a", "a", "missing", "missing"}, func(ctx context.Context, keys []string) (map[string][]byte, error) {
		asked = append(asked, keys...)
		return map[string][]byte{"a": []byte("A"), "b": []byte("B"), "extra": []byte("X")}, nil
	})
	if err != nil || len(got) != 2 || string(got["a"]) != "A" || string(got["b"]) != "B" {
		t.Errorf("GetMany: got %v, %v", got, err)
	}
	if len(asked) != 3 {
		t.Errorf("loader asked for %v, want a, b, missing once each", asked)
	}
}
