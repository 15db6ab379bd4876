package cache_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// wait returns what ch delivers, or fails the test after 10 s (only on
// failure: every case below answers at once when the code is right).
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer after 10s", what)
		panic("unreachable")
	}
}

type getResult struct {
	v     string
	found bool
	err   error
}

func goGet(c *cache.Cache, ctx context.Context, key string) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		v, found, err := c.Get(ctx, key)
		ch <- getResult{string(v), found, err}
	}()
	return ch
}

// A load whose goroutine exits (runtime.Goexit, as t.FailNow does) still
// ends its flight: its waiters get an error, and later Gets load again
// instead of waiting forever.
func TestLoaderGoexitEndsItsFlight(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var loads atomic.Int64
	entered, exit := make(chan struct{}), make(chan struct{})
	c, _ := cache.New(cache.Config{Name: "c", Backend: b,
		Load: func(context.Context, string) ([]byte, bool, error) {
			if loads.Add(1) == 1 {
				close(entered)
				<-exit
				runtime.Goexit()
			}
			return []byte("v"), true, nil
		}})
	go c.Get(context.Background(), "k") //nolint:errcheck // its goroutine exits
	<-entered
	follower := goGet(c, context.Background(), "k")
	for cache.Waiters(c, "k") < 2 { // the follower has joined the flight
		runtime.Gosched()
	}
	close(exit)
	if got := wait(t, follower, "a Get that joined a load whose goroutine exited"); !errors.Is(got.err, cache.ErrLoadExited) {
		t.Errorf("joined a load that exited: got %+v, want ErrLoadExited", got)
	}
	if got := wait(t, goGet(c, context.Background(), "k"), "Get after a load whose goroutine exited"); got.v != "v" || got.err != nil {
		t.Errorf("Get after the exited load: got %+v, want v", got)
	}
}

// The caller that starts a load is a waiter like the others: when its
// context ends it stops waiting with ctx.Err(), even though the origin has
// not answered (here: an origin that ignores its context). The others still
// get the load's result, and it is stored.
func TestLeaderStopsWaitingWhenItsContextEnds(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var loads atomic.Int64
	load := func(ctx context.Context, key string) ([]byte, bool, error) {
		if loads.Add(1) == 1 {
			close(entered)
			<-release // a slow origin that ignores cancellation
		}
		return []byte("v"), true, nil
	}
	c, err := cache.New(cache.Config{Name: "c", Backend: b, Load: load})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	leader := goGet(c, ctx, "k")
	<-entered
	follower := goGet(c, context.Background(), "k")
	for cache.Waiters(c, "k") < 2 { // the follower has joined the flight
		runtime.Gosched()
	}
	cancel()
	got := wait(t, leader, "leader Get after its context was cancelled")
	if !errors.Is(got.err, context.Canceled) {
		t.Errorf("leader: got (%q, %v), want context.Canceled", got.v, got.err)
	}
	close(release)
	if got := wait(t, follower, "follower Get"); got.v != "v" || !got.found || got.err != nil {
		t.Errorf("follower: got %+v, want the load's value", got)
	}
	if v, _, err := c.Get(context.Background(), "k"); string(v) != "v" || err != nil || loads.Load() != 1 {
		t.Errorf("after the load: got (%q, %v) with %d loads, want v from the cache after 1 load", v, err, loads.Load())
	}
}

// A load nobody waits for any more is cancelled, so an origin call that
// honours its context returns and the flight closes: a later Get starts a
// load of its own instead of joining one that may never end.
func TestAbandonedLoadIsCancelledAndItsFlightCloses(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var loads atomic.Int64
	entered := make(chan struct{})
	loaderDone := make(chan error, 1)
	load := func(ctx context.Context, key string) ([]byte, bool, error) {
		if loads.Add(1) == 1 {
			close(entered)
			<-ctx.Done() // an origin that hangs, but honours its context
			loaderDone <- ctx.Err()
			return nil, false, ctx.Err()
		}
		return []byte("v2"), true, nil
	}
	c, _ := cache.New(cache.Config{Name: "c", Backend: b, Load: load})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	first := goGet(c, ctx, "k")
	<-entered
	cancel()
	if got := wait(t, first, "Get after its context was cancelled"); !errors.Is(got.err, context.Canceled) {
		t.Errorf("abandoned Get: got %+v, want context.Canceled", got)
	}
	if err := wait(t, loaderDone, "the abandoned load's context"); !errors.Is(err, context.Canceled) {
		t.Errorf("abandoned load's context: got %v, want context.Canceled", err)
	}
	if got := wait(t, goGet(c, context.Background(), "k"), "Get after the abandoned load"); got.v != "v2" || got.err != nil {
		t.Errorf("Get after the abandoned load: got %+v, want v2 from a new load", got)
	}
}

// A caller whose context has already ended gets ctx.Err(): the origin is
// not called for it, and its cancellation is not reported as a store
// failure (Logger and OnError hear about store failures only).
func TestCancelledCallerDoesNotReachOriginNorReportStoreFailure(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var loads atomic.Int64
	var reports atomic.Int64
	c, _ := cache.New(cache.Config{Name: "c", Backend: b,
		OnError: func(string, error) { reports.Add(1) },
		Load: func(context.Context, string) ([]byte, bool, error) {
			loads.Add(1)
			return []byte("v"), true, nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	bulk := func(context.Context, []string) (map[string][]byte, error) {
		loads.Add(1)
		return map[string][]byte{"k": []byte("v")}, nil
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, _, err := c.Get(ctx, "k"); return err }},
		{"GetMany bulk", func() error { _, err := c.GetMany(ctx, []string{"k"}, bulk); return err }},
		{"GetMany per key", func() error { _, err := c.GetMany(ctx, []string{"k"}, nil); return err }},
	} {
		loads.Store(0)
		reports.Store(0)
		err := tc.call()
		if !errors.Is(err, context.Canceled) || loads.Load() != 0 || reports.Load() != 0 {
			t.Errorf("%s with a cancelled context: got err %v, %d loads, %d reports; want context.Canceled, 0, 0",
				tc.name, err, loads.Load(), reports.Load())
		}
	}
}

// A load whose every caller gave up, and that returns a value anyway (an
// origin that ignores its context), is still stored.
func TestAbandonedLoadThatReturnsIsStored(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var loads atomic.Int64
	entered, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var reports atomic.Int64
	c, _ := cache.New(cache.Config{Name: "c", Backend: b, OnError: func(string, error) { reports.Add(1) },
		Load: func(context.Context, string) ([]byte, bool, error) {
			if loads.Add(1) == 1 {
				close(entered)
				<-release
				defer close(returned)
			}
			return []byte("v"), true, nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	first := goGet(c, ctx, "k")
	<-entered
	cancel()
	if got := wait(t, first, "Get after its context was cancelled"); !errors.Is(got.err, context.Canceled) {
		t.Errorf("abandoned Get: got %+v, want context.Canceled", got)
	}
	close(release)
	<-returned
	for deadline := time.Now().Add(10 * time.Second); b.Engine().Len() == 0; { // the write follows the loader's return
		if time.Now().After(deadline) {
			t.Fatal("the abandoned load's result was not stored")
		}
		runtime.Gosched()
	}
	if v, _, err := c.Get(context.Background(), "k"); string(v) != "v" || err != nil || loads.Load() != 1 || reports.Load() != 0 {
		t.Errorf("after the abandoned load returned: got (%q, %v), %d loads, %d store errors; want v from the cache, 1, 0", v, err, loads.Load(), reports.Load())
	}
}

// A loader that panics is an origin call that failed: LoadErrors counts it.
func TestLoaderPanicCountsAsLoadError(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	c, _ := cache.New(cache.Config{Name: "c", Backend: b,
		Load: func(context.Context, string) ([]byte, bool, error) { panic("origin bug") }})
	_, _, err := c.Get(context.Background(), "k")
	var pe *cache.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Get with a panicking loader: got %v, want *PanicError", err)
	}
	if st := c.Stats(); st.Loads != 1 || st.LoadErrors != 1 {
		t.Errorf("Stats after a panicking load: got Loads %d, LoadErrors %d; want 1, 1", st.Loads, st.LoadErrors)
	}
	func() {
		defer func() { _ = recover() }() // a bulk loader runs on the caller's goroutine: its panic is the caller's
		c.GetMany(context.Background(), []string{"b"}, func(context.Context, []string) (map[string][]byte, error) { panic("origin bug") })
	}()
	if st := c.Stats(); st.Loads != 2 || st.LoadErrors != 2 {
		t.Errorf("Stats after a panicking bulk load: got Loads %d, LoadErrors %d; want 2, 2", st.Loads, st.LoadErrors)
	}
}

// Refresh ahead with jitter: an entry is refreshed before it expires,
// whatever its jittered TTL, so a hot key never makes a caller wait. Here
// RefreshAfter is within the jitter of TTL: entries whose TTL was jittered
// below RefreshAfter must refresh too.
func TestEveryJitteredEntryRefreshesBeforeItExpires(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	c, err := cache.New(cache.Config{Name: "c", Backend: b, TTL: 10 * time.Second, Jitter: 0.5, RefreshAfter: 9 * time.Second,
		Load: func(_ context.Context, key string) ([]byte, bool, error) { return []byte(key), true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// Jittered over [5 s, 15 s], 40% of the entries live less than
	// RefreshAfter: among 50, the shortest does (but for a chance of 1e-11).
	const n = 50
	for i := range n {
		if _, _, err := c.Get(ctx, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	shortest, ttl := "", time.Duration(1<<62)
	for k, it := range b.Engine().Items() {
		if it.TTL < ttl {
			shortest, ttl = k, it.TTL
		}
	}
	if ttl >= 9*time.Second {
		t.Skipf("no entry jittered below RefreshAfter (shortest %v)", ttl)
	}
	key := shortest[len("tide:cache:c:k:"):]
	clk.Advance(ttl - time.Millisecond) // its last millisecond
	if v, _, err := c.Get(ctx, key); string(v) != key || err != nil {
		t.Fatalf("Get %q in its last millisecond: got (%q, %v)", key, v, err)
	}
	if st := c.Stats(); st.Refreshes != 1 {
		t.Errorf("entry with TTL %v (RefreshAfter 9s) in its last millisecond: %d refreshes started, want 1 (else the hot key expires and a caller waits for the origin)", ttl, st.Refreshes)
	}
}

// Without jitter an entry is due for a refresh at RefreshAfter exactly,
// at the limits too (TTLs whose products with each other overflow 64
// bits).
func TestRefreshAfterBoundaryWithoutJitter(t *testing.T) {
	for _, tc := range []struct{ ttl, after time.Duration }{
		{10 * time.Second, 5 * time.Second},
		{10 * time.Second, time.Nanosecond},
		{10 * time.Second, 10*time.Second - time.Nanosecond},
		{cache.MaxTTL, cache.MaxTTL - time.Nanosecond},
		{cache.MaxTTL, cache.MaxTTL / 3},
	} {
		b, clk := storetest.NewEmbedded(t)
		c, err := cache.New(cache.Config{Name: "c", Backend: b, TTL: tc.ttl, RefreshAfter: tc.after, NoJitter: true,
			Load: func(context.Context, string) ([]byte, bool, error) { return []byte("v"), true, nil }})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c.Get(ctx, "k")
		clk.Advance(tc.after - time.Nanosecond)
		c.Get(ctx, "k")
		if n := c.Stats().Refreshes; n != 0 {
			t.Errorf("TTL %v, RefreshAfter %v: at age RefreshAfter−1ns got %d refreshes, want 0", tc.ttl, tc.after, n)
		}
		clk.Advance(time.Nanosecond)
		c.Get(ctx, "k")
		if n := c.Stats().Refreshes; n != 1 {
			t.Errorf("TTL %v, RefreshAfter %v: at age RefreshAfter got %d refreshes, want 1", tc.ttl, tc.after, n)
		}
		c.Close()
	}
}

// A bulk load whose caller's context ends while it runs, and that returns
// anyway, is stored like any other: the store writes are not failed (and
// reported as store failures) for the caller's cancellation.
func TestGetManyStoresWhatALateBulkLoadReturns(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var reports atomic.Int64
	c, _ := cache.New(cache.Config{Name: "c", Backend: b, OnError: func(string, error) { reports.Add(1) }})
	ctx, cancel := context.WithCancel(context.Background())
	got, err := c.GetMany(ctx, []string{"a", "b"}, func(context.Context, []string) (map[string][]byte, error) {
		cancel() // the caller's deadline passes while the origin answers
		return map[string][]byte{"a": []byte("A")}, nil
	})
	if err != nil || string(got["a"]) != "A" || len(got) != 1 {
		t.Errorf("GetMany: got (%q, %v), want a=A", got, err)
	}
	if n := reports.Load(); n != 0 || b.Engine().Len() != 2 {
		t.Errorf("after the bulk load: %d store failures reported, %d entries; want 0, 2 (a's value and b's miss)", n, b.Engine().Len())
	}
}

// Callers that share one load each get a value of their own: one that
// modifies its result does not change another's (nor race with it), just
// as with values read from the store.
func TestSharedLoadResultsAreNotAliased(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	entered, release := make(chan struct{}), make(chan struct{})
	c, _ := cache.New(cache.Config{Name: "c", Backend: b,
		Load: func(context.Context, string) ([]byte, bool, error) {
			close(entered)
			<-release
			return []byte("value"), true, nil
		}})
	leader := make(chan []byte, 1)
	go func() { v, _, _ := c.Get(context.Background(), "k"); leader <- v }()
	<-entered
	follower := make(chan []byte, 1)
	go func() { v, _, _ := c.Get(context.Background(), "k"); follower <- v }()
	for cache.Waiters(c, "k") < 2 {
		runtime.Gosched()
	}
	close(release)
	a, f := wait(t, leader, "leader"), wait(t, follower, "follower")
	f[0] = 'X'
	if string(a) != "value" || string(f) != "Xalue" {
		t.Errorf("after the follower modified its result: leader has %q, follower %q; want value, Xalue", a, f)
	}
}

// Keys an adversary chooses (empty, NUL bytes, separators, hash-tag
// braces, the raw/hashed boundary, far over the engine's key limit) are
// each cached under their own entry: a second Get of each hits, no two
// share a value, and no store failure is reported.
func TestHostileKeysAreCachedApart(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var reports atomic.Int64
	var loads atomic.Int64
	c, _ := cache.New(cache.Config{Name: "c", Backend: b, OnError: func(string, error) { reports.Add(1) },
		Load: func(_ context.Context, key string) ([]byte, bool, error) {
			loads.Add(1)
			return []byte(key), true, nil
		}})
	long := func(n int) string { return string(make([]byte, n)) }
	keys := []string{"", "\x00", "\x00\x00", ":", "k:", "h:", "k:x", "x", "{x}", "{", "}", "tide:cache:c:k:x",
		long(255), long(256), long(257), long(70 << 10), "h:" + long(64)}
	ctx := context.Background()
	for round := range 2 {
		for _, k := range keys {
			v, found, err := c.Get(ctx, k)
			if string(v) != k || !found || err != nil {
				t.Errorf("round %d, Get(%q…): got (%d bytes, %v, %v), want its own value", round, k[:min(len(k), 8)], len(v), found, err)
			}
		}
	}
	if n := loads.Load(); n != int64(len(keys)) || reports.Load() != 0 {
		t.Errorf("got %d loads and %d store failures for %d keys read twice, want %d and 0", n, reports.Load(), len(keys), len(keys))
	}
}
