package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/cache"
)

// origin is a fake slow origin for the refresh-ahead cases: a value that
// changes, a load counter, and a gate that holds chosen loads.
type origin struct {
	value atomic.Value // string
	loads atomic.Int64
	fail  atomic.Bool
	// hold, if non-nil for load n (1-based), makes load n signal entered
	// and wait for release.
	hold             int64
	entered, release chan struct{}
}

func newOrigin(v string, hold int64) *origin {
	o := &origin{hold: hold, entered: make(chan struct{}), release: make(chan struct{})}
	o.value.Store(v)
	return o
}

func (o *origin) load(context.Context, string) ([]byte, bool, error) {
	v := o.value.Load().(string) // what the origin says when the load begins
	n := o.loads.Add(1)
	if n == o.hold {
		close(o.entered)
		<-o.release
	}
	if o.fail.Load() {
		return nil, false, errors.New("origin down")
	}
	return []byte(v), true, nil
}

// runCacheRefresh checks refresh ahead (stale-while-revalidate), its
// interaction with Invalidate, per-call and bulk loaders, and the stats.
func runCacheRefresh(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	newCache := func(t *testing.T, f Fixture, cfg cache.Config) *cache.Cache {
		t.Helper()
		u := f.unit()
		cfg.Name, cfg.Backend, cfg.NoJitter = "swr", f.Backend, true
		if cfg.TTL == 0 {
			cfg.TTL, cfg.RefreshAfter = 10*u, 5*u
		}
		c, err := cache.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	get := func(t *testing.T, c *cache.Cache, key string) string {
		t.Helper()
		v, ok, err := c.Get(ctx, key)
		if err != nil || !ok {
			t.Fatalf("Get(%q): got (%q, %v, %v)", key, v, ok, err)
		}
		return string(v)
	}
	t.Run("AgedEntryServedWhileOneRefreshLoads", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		o := newOrigin("v1", 2)
		c := newCache(t, f, cache.Config{Load: o.load})
		get(t, c, "k")
		f.Advance(6 * f.unit()) // past RefreshAfter, within TTL
		o.value.Store("v2")
		// Every caller gets the aged value at once, while the single
		// refresh is held at the origin.
		var wg sync.WaitGroup
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if v, _, err := c.Get(ctx, "k"); string(v) != "v1" || err != nil {
					t.Errorf("Get during the refresh: got (%q, %v), want the aged v1 without waiting", v, err)
				}
			}()
		}
		served := make(chan struct{})
		go func() { wg.Wait(); close(served) }()
		select {
		case <-served:
		case <-time.After(10 * time.Second): // only on failure
			t.Error("Gets of an aged entry waited for its refresh")
		}
		<-o.entered
		close(o.release)
		<-served
		c.Close() // waits for the refresh
		if got := get(t, c, "k"); got != "v2" {
			t.Errorf("Get after the refresh: got %q, want v2", got)
		}
		if n := o.loads.Load(); n != 2 {
			t.Errorf("%d loads, want 2 (the first, and one refresh for 50 callers)", n)
		}
		if st := c.Stats(); st.Refreshes != 1 || st.Loads != 2 || st.Misses != 1 || st.Hits != 51 {
			t.Errorf("Stats: got %+v, want 1 refresh, 2 loads, 1 miss, 51 hits", st)
		}
	})
	t.Run("InvalidateDuringRefresh", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		o := newOrigin("v1", 2)
		c := newCache(t, f, cache.Config{Load: o.load})
		get(t, c, "k")
		f.Advance(6 * f.unit())
		o.value.Store("v2")
		if got := get(t, c, "k"); got != "v1" { // starts the refresh, which reads v2 and is held
			t.Fatalf("aged Get: got %q, want v1", got)
		}
		<-o.entered
		o.value.Store("v3")
		if err := c.Invalidate(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		// Neither the aged value nor the refresh's (older) result may answer
		// a Get that follows Invalidate.
		during := make(chan string)
		go func() {
			v, _, _ := c.Get(ctx, "k")
			during <- string(v)
		}()
		select {
		case v := <-during:
			if v != "v3" {
				t.Errorf("Get after Invalidate, during the refresh: got %q, want v3", v)
			}
		case <-time.After(10 * time.Second): // only on failure: it joined the refresh
			t.Error("Get after Invalidate joined the refresh that began before it")
			close(o.release)
			<-during
			return
		}
		close(o.release)
		c.Close()
		if got := get(t, c, "k"); got != "v3" {
			t.Errorf("Get after the refresh ended: got %q, want v3 (the refresh landed over Invalidate)", got)
		}
	})
	t.Run("FailedRefreshKeepsAgedValue", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		o := newOrigin("v1", 0)
		var reported []string
		var mu sync.Mutex
		c := newCache(t, f, cache.Config{Load: o.load, OnError: func(key string, err error) {
			mu.Lock()
			reported = append(reported, fmt.Sprint(key, ": ", err))
			mu.Unlock()
		}})
		get(t, c, "k")
		f.Advance(6 * f.unit())
		o.fail.Store(true)
		if got := get(t, c, "k"); got != "v1" {
			t.Fatalf("aged Get: got %q, want v1", got)
		}
		c.Close()
		if got := get(t, c, "k"); got != "v1" {
			t.Errorf("Get after a failed refresh: got %q, want the aged v1 until its TTL", got)
		}
		if !slices.Equal(reported, []string{"k: origin down"}) {
			t.Errorf("reports: got %q, want the failed refresh with its key and cause", reported)
		}
		if st := c.Stats(); st.LoadErrors != 1 {
			t.Errorf("Stats.LoadErrors = %d, want 1", st.LoadErrors)
		}
		f.Advance(5*f.unit() + f.Slack) // past the TTL
		if _, _, err := c.Get(ctx, "k"); err == nil {
			t.Error("Get past the TTL with the origin down: got a value, want the origin's error")
		}
	})
	t.Run("RefreshesAreBounded", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		o := newOrigin("v1", 3) // loads 1, 2: keys a, b; 3: a's refresh, held
		c := newCache(t, f, cache.Config{Load: o.load, MaxRefreshes: 1})
		get(t, c, "a")
		get(t, c, "b")
		f.Advance(6 * f.unit())
		get(t, c, "a")
		<-o.entered
		if got := get(t, c, "b"); got != "v1" { // no slot: served aged, no refresh
			t.Errorf("Get(b): got %q", got)
		}
		if st := c.Stats(); st.Refreshes != 1 {
			t.Errorf("Refreshes with MaxRefreshes 1 and one running: got %d, want 1", st.Refreshes)
		}
		close(o.release)
		c.Close()
		c.Close()      // idempotent
		get(t, c, "b") // closed: served aged, no refresh started
		if st := c.Stats(); st.Refreshes != 1 || o.loads.Load() != 3 {
			t.Errorf("after Close: %d refreshes, %d loads; want 1 and 3", st.Refreshes, o.loads.Load())
		}
	})
	t.Run("PerCallLoader", func(t *testing.T) {
		f := newFixture(t)
		c := newCache(t, f, cache.Config{})
		if _, _, err := c.Get(ctx, "k"); !errors.Is(err, cache.ErrNoLoader) {
			t.Fatalf("Get without a loader: got %v, want ErrNoLoader", err)
		}
		if _, err := c.GetMany(ctx, []string{"k"}, nil); !errors.Is(err, cache.ErrNoLoader) {
			t.Fatalf("GetMany without a loader: got %v, want ErrNoLoader", err)
		}
		user := "alice"
		v, ok, err := c.GetWith(ctx, "profile:1", func(_ context.Context, k string) ([]byte, bool, error) {
			return []byte(user + "'s " + k), true, nil
		})
		if string(v) != "alice's profile:1" || !ok || err != nil {
			t.Fatalf("GetWith: got (%q, %v, %v)", v, ok, err)
		}
		v, _, _ = c.GetWith(ctx, "profile:1", func(context.Context, string) ([]byte, bool, error) {
			t.Error("a cached key was loaded again")
			return nil, false, nil
		})
		if string(v) != "alice's profile:1" {
			t.Errorf("GetWith on a hit: got %q", v)
		}
	})
	t.Run("GetMany", func(t *testing.T) {
		f := newFixture(t)
		var calls [][]string
		bulk := func(_ context.Context, keys []string) (map[string][]byte, error) {
			calls = append(calls, slices.Clone(keys))
			out := map[string][]byte{}
			for _, k := range keys {
				if k != "nope" {
					out[k] = []byte("v" + k)
				}
			}
			return out, nil
		}
		c := newCache(t, f, cache.Config{Load: func(_ context.Context, k string) ([]byte, bool, error) {
			return []byte("v" + k), true, nil
		}})
		c.Get(ctx, "a")
		got, err := c.GetMany(ctx, []string{"a", "b", "nope", "c", "b"}, bulk)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(map[string][]byte{"a": []byte("va"), "b": []byte("vb"), "c": []byte("vc")}) {
			t.Fatalf("GetMany: got (%q, %v)", got, err)
		}
		if fmt.Sprint(calls) != "[[b nope c]]" {
			t.Fatalf("bulk loads: got %v, want one call for the missing keys in order, without duplicates", calls)
		}
		got, _ = c.GetMany(ctx, []string{"a", "b", "nope", "c"}, bulk)
		if len(calls) != 1 || len(got) != 3 {
			t.Fatalf("second GetMany: %d bulk calls, %d values; want everything cached (the miss negatively)", len(calls), len(got))
		}
		boom := errors.New("origin down")
		if _, err := c.GetMany(ctx, []string{"x"}, func(context.Context, []string) (map[string][]byte, error) { return nil, boom }); !errors.Is(err, boom) {
			t.Fatalf("GetMany with a failing bulk loader: got %v", err)
		}
		if got, err := c.GetMany(ctx, []string{"x", "a"}, nil); err != nil || string(got["x"]) != "vx" || string(got["a"]) != "va" {
			t.Fatalf("GetMany with Config.Load: got (%q, %v)", got, err)
		}
	})
	t.Run("GetManyLoadFencedByInvalidate", func(t *testing.T) {
		f := newFixture(t)
		c := newCache(t, f, cache.Config{Load: func(context.Context, string) ([]byte, bool, error) { return []byte("fresh"), true, nil }})
		_, err := c.GetMany(ctx, []string{"k"}, func(_ context.Context, keys []string) (map[string][]byte, error) {
			if err := c.Invalidate(ctx, "k"); err != nil { // the value changes while the bulk load runs
				t.Error(err)
			}
			return map[string][]byte{"k": []byte("stale")}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if v := get(t, c, "k"); v != "fresh" {
			t.Errorf("Get after an Invalidate during a bulk load: got %q, want a new load", v)
		}
	})
	t.Run("EventsNameTheStats", func(t *testing.T) {
		f := newFixture(t)
		c := newCache(t, f, cache.Config{Load: func(context.Context, string) ([]byte, bool, error) { return nil, false, errors.New("x") }})
		c.Get(ctx, "k")
		got := map[string]uint64{}
		for k, v := range c.Events() {
			got[k] = v
		}
		want := map[string]uint64{"hit": 0, "miss": 1, "load": 1, "load_error": 1, "refresh": 0}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Events: got %v, want %v", got, want)
		}
	})
}
