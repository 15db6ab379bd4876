package cache_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/expvarstats"
	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunCache(t, storetest.Embedded)
}

func TestNewRejects(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	load := func(context.Context, string) ([]byte, bool, error) { return nil, false, nil }
	for i, c := range []cache.Config{
		{Name: "c", Load: load},
		{Backend: b, Load: load},              // no name
		{Name: "a:b", Backend: b, Load: load}, // a name reaching into the key syntax
		{Name: "c", Backend: b, Load: load, TTL: -1},
		{Name: "c", Backend: b, Load: load, Jitter: 1.5},
		{Name: "c", Backend: b, Load: load, TTL: math.MaxInt64},             // no backend can store it
		{Name: "c", Backend: b, Load: load, TTL: cache.MaxTTL, Jitter: 0.5}, // over MaxTTL with its jitter
		{Name: "c", Backend: b, Load: load, NegativeTTL: math.MaxInt64},
		{Name: "c", Backend: b, Load: load, RefreshAfter: -1},
		{Name: "c", Backend: b, Load: load, TTL: time.Minute, RefreshAfter: time.Minute}, // would never refresh
		{Name: "c", Backend: b, Load: load, MaxRefreshes: -1},
	} {
		if _, err := cache.New(c); !errors.Is(err, cache.ErrInvalidConfig) {
			t.Errorf("case %d: got %v, want ErrInvalidConfig", i, err)
		}
	}
}

func TestJitter(t *testing.T) {
	cases := []struct {
		ttl    time.Duration
		frac   float64
		lo, hi time.Duration
	}{
		{time.Minute, 0.1, 54 * time.Second, 66 * time.Second},
		{time.Minute, 0, time.Minute, time.Minute},
		{0, 0.1, 0, 0},
		{10, 5, 1, 20},
		{time.Nanosecond, 0.999, time.Nanosecond, time.Nanosecond}, // never rounds to 0 (an invalid TTL)
		{math.MaxInt64, 0.5, math.MaxInt64 / 2, math.MaxInt64},     // at the type's limit: not 1 ns
	}
	for _, c := range cases {
		for range 100 {
			if got := cache.Jitter(c.ttl, c.frac); got < c.lo || got > c.hi {
				t.Fatalf("Jitter(%v, %v) = %v, want in [%v, %v]", c.ttl, c.frac, got, c.lo, c.hi)
			}
		}
	}
}

// TestOneNanosecondTTL: the shortest TTLs a Cache computes (TTL and
// NegativeTTL of 1 ns, with jitter) are written as 1 ns TTLs, never as a
// TTL of 0 (which the store refuses, and which must never mean "forever"):
// no store error, and the entries expire.
func TestOneNanosecondTTL(t *testing.T) {
	ctx := context.Background()
	b, clk := storetest.NewEmbedded(t)
	var storeErrs []error
	loads := 0
	c, err := cache.New(cache.Config{Name: "c", Backend: b, TTL: time.Nanosecond, NegativeTTL: time.Nanosecond, Jitter: 0.9,
		Load: func(_ context.Context, key string) ([]byte, bool, error) {
			loads++
			return []byte("v"), key == "hit", nil
		},
		OnError: func(_ string, err error) { storeErrs = append(storeErrs, err) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"hit", "miss"} {
		if _, _, err := c.Get(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	for k, it := range b.Engine().Items() {
		if it.TTL != time.Nanosecond {
			t.Errorf("entry %q: TTL %v, want 1ns", k, it.TTL)
		}
	}
	if n := b.Engine().Len(); n != 2 {
		t.Errorf("got %d entries, want 2 (a value and a remembered miss)", n)
	}
	clk.Advance(time.Nanosecond)
	for _, key := range []string{"hit", "miss"} {
		if _, _, err := c.Get(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if loads != 4 {
		t.Errorf("got %d loads, want 4 (each entry expired after 1 ns)", loads)
	}
	if len(storeErrs) != 0 {
		t.Errorf("store errors: %v", storeErrs)
	}
}

func TestStoreDownFallsThrough(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	flaky.Down.Store(true)
	var reported int
	c, _ := cache.New(cache.Config{Name: "c", Backend: flaky, OnError: func(string, error) { reported++ },
		Load: func(context.Context, string) ([]byte, bool, error) { return []byte("origin"), true, nil }})
	v, ok, err := c.Get(context.Background(), "k")
	if string(v) != "origin" || !ok || err != nil || reported != 1 {
		t.Fatalf("store down: got (%q, %v, %v, %d reports), want the origin's value and 1 report", v, ok, err, reported)
	}
}

func TestGroupPanicAndCancel(t *testing.T) {
	var g cache.Group
	_, err := g.Do(context.Background(), "k", func(context.Context) (cache.Result, error) { panic("boom") })
	var pe *cache.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("panicking load: got %v, want *PanicError", err)
	}
	// The log must say what panicked and where: the value in the text, the
	// stack in the error.
	if !strings.Contains(err.Error(), "boom") || !bytes.Contains(pe.Stack, []byte("TestGroupPanicAndCancel")) {
		t.Errorf("panicking load: got %q with a %d-byte stack, want the value in the text and the load's stack", err, len(pe.Stack))
	}
	// A waiter whose context ends stops waiting for a flight in progress.
	// The flight is registered before its function runs, so once started
	// is closed the second caller joins it (it has no function of its own).
	started, block, flown := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flown)
		g.Do(context.Background(), "slow", func(context.Context) (cache.Result, error) {
			close(started)
			<-block
			return cache.Result{}, nil
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, shared, err := g.DoShared(ctx, "slow", nil); !errors.Is(err, context.Canceled) || !shared {
		t.Fatalf("cancelled waiter: got (shared %v, %v), want (true, context.Canceled)", shared, err)
	}
	close(block)
	<-flown
}

func TestStoreFailureIsLoggedWithKeyAndCause(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	flaky.Down.Store(true)
	var logs bytes.Buffer
	c, _ := cache.New(cache.Config{Name: "users", Backend: flaky, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Load: func(context.Context, string) ([]byte, bool, error) { return []byte("origin"), true, nil }})
	if v, _, err := c.Get(context.Background(), "user:42"); string(v) != "origin" || err != nil {
		t.Fatalf("Get with the store down: got (%q, %v)", v, err)
	}
	out := logs.String()
	for _, want := range []string{"cache=users", "key=user:42", "injected failure"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q: %s", want, out)
		}
	}
}

func TestCloseIsIdempotentAndConcurrent(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	c, _ := cache.New(cache.Config{Name: "c", Backend: b})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); c.Close() }()
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// A Cache is read by expvarstats and contrib/prometheus as an EventSource.
var _ expvarstats.EventSource = (*cache.Cache)(nil)
