package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// manualAfter makes WaitN's sleeps advance the manual clock instead of
// waiting, and records each sleep.
func manualAfter(clk *clock.Manual, slept *[]time.Duration) func(time.Duration) <-chan time.Time {
	return func(d time.Duration) <-chan time.Time {
		*slept = append(*slept, d)
		clk.Advance(d)
		c := make(chan time.Time, 1)
		c <- clk.Time()
		return c
	}
}

// WaitN sleeps exactly as long as the limiter says and then admits; the
// events it admits never exceed the rate.
func TestWaitSleepsUntilAdmitted(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	l, _ := ratelimit.New(ratelimit.Config{Name: "jobs", Backend: b, Limit: 2, Period: time.Second}) // a token every 500ms, burst 2
	var slept []time.Duration
	ratelimit.SetAfter(l, manualAfter(clk, &slept))
	start := clk.Time()
	for i := range 5 {
		if err := l.Wait(context.Background(), "worker"); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	if got, want := fmt.Sprint(slept), "[500ms 500ms 500ms]"; got != want {
		t.Errorf("sleeps: got %s, want %s (two from the burst, then one token per 500ms)", got, want)
	}
	if got := clk.Time().Sub(start); got != 1500*time.Millisecond {
		t.Errorf("5 events took %v of store time, want 1.5s", got)
	}
}

// A wait that would end after the context's deadline fails at once,
// without sleeping; a cancelled context ends the wait.
func TestWaitRespectsContext(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	l, _ := ratelimit.New(ratelimit.Config{Name: "jobs", Backend: b, Limit: 1, Period: time.Hour})
	if err := l.Wait(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	var slept []time.Duration
	ratelimit.SetAfter(l, manualAfter(clk, &slept))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.Wait(ctx, "k"); !errors.Is(err, ratelimit.ErrWaitExceedsDeadline) || len(slept) != 0 {
		t.Errorf("deadline in 1m, wait of 1h: got %v after sleeps %v, want ErrWaitExceedsDeadline at once", err, slept)
	}

	waiting := make(chan struct{})
	ratelimit.SetAfter(l, func(time.Duration) <-chan time.Time {
		close(waiting)
		return nil // never fires
	})
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Wait(ctx, "k") }()
	<-waiting
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting: got %v, want context.Canceled", err)
	}
	if err := l.Wait(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("already cancelled: got %v, want context.Canceled", err)
	}
}

// A short real wait: WaitN on the real timer returns once admitted.
func TestWaitRealTimer(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	l, _ := ratelimit.New(ratelimit.Config{Name: "jobs", Backend: b, Limit: 1, Period: 5 * time.Millisecond})
	l.Allow(context.Background(), "k")
	done := make(chan error)
	go func() { done <- l.Wait(context.Background(), "k") }()
	clk.Advance(5 * time.Millisecond) // before or after the first decision: either way the token is due
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The store failing: WaitN proceeds when the limiter fails open and
// returns ErrStore when it fails closed; a cost above the limit is
// refused at once by WaitN and ReserveN.
func TestWaitStoreFailureAndCost(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	flaky.Down.Store(true)
	open, _ := ratelimit.New(ratelimit.Config{Name: "j", Backend: flaky, Limit: 1, Period: time.Hour, OnStoreError: ratelimit.FailOpen})
	closed, _ := ratelimit.New(ratelimit.Config{Name: "j", Backend: flaky, Limit: 1, Period: time.Hour})
	if err := open.Wait(context.Background(), "k"); err != nil {
		t.Errorf("fail open: got %v, want nil", err)
	}
	if err := closed.Wait(context.Background(), "k"); !errors.Is(err, ratelimit.ErrStore) {
		t.Errorf("fail closed: got %v, want ErrStore", err)
	}
	if err := open.WaitN(context.Background(), "k", 2); !errors.Is(err, ratelimit.ErrInvalidCost) {
		t.Errorf("WaitN above the limit: got %v, want ErrInvalidCost", err)
	}
	if r, err := open.ReserveN(context.Background(), "k", -1); r != nil || !errors.Is(err, ratelimit.ErrInvalidCost) {
		t.Errorf("ReserveN(-1): got (%v, %v), want (nil, ErrInvalidCost)", r, err)
	}
}

// Reserve admits now or reports the delay, holding nothing.
func TestReserve(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	l, _ := ratelimit.New(ratelimit.Config{Name: "jobs", Backend: b, Limit: 1, Period: time.Second})
	ctx := context.Background()
	r, err := l.Reserve(ctx, "k")
	if err != nil || !r.OK() || r.Delay() != 0 {
		t.Fatalf("first: got (%v, %v, %v), want admitted with no delay", r.OK(), r.Delay(), err)
	}
	r, err = l.Reserve(ctx, "k")
	if err != nil || r.OK() || r.Delay() != time.Second {
		t.Fatalf("second: got (%v, %v, %v), want refused with delay 1s", r.OK(), r.Delay(), err)
	}
	clk.Advance(time.Second)
	if r, _ := l.Reserve(ctx, "k"); !r.OK() {
		t.Error("after the delay: got refused, want admitted (the refused reservation held nothing)")
	}
}

// The middleware charges each request its cost: a bulk request consumes
// more, a zero-cost request only inspects, and a cost no quota can hold
// is 413 rather than a 429 the client would retry forever.
func TestMiddlewareCost(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	l, _ := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 10, Period: time.Minute})
	mw, err := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l,
		Key:  func(*http.Request) (string, bool) { return "203.0.113.1", true },
		Cost: func(r *http.Request) int64 { n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64); return n },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i, s := range []struct {
		n         string
		code      int
		rateLimit string
	}{
		{"4", 200, `"api";r=6;t=60`},
		{"0", 200, `"api";r=6;t=60`},
		{"6", 200, `"api";r=0;t=60`},
		{"1", 429, `"api";r=0;t=60`},
		{"11", 413, ""},
		{"-1", 500, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/bulk?n="+s.n, nil))
		if rec.Code != s.code || rec.Header().Get("RateLimit") != s.rateLimit {
			t.Errorf("step %d (cost %s): got %d %q, want %d %q", i, s.n, rec.Code, rec.Header().Get("RateLimit"), s.code, s.rateLimit)
		}
	}
}

// RateLimit-Policy states the quota and its window as the draft allows:
// whole seconds only, and for a token bucket the burst and its refill
// time.
func TestPolicyField(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for _, c := range []struct {
		cfg  ratelimit.Config
		want string
	}{
		{ratelimit.Config{Limit: 100, Period: time.Minute}, `"p";q=100;w=60`},
		{ratelimit.Config{Limit: 3, Period: 10 * time.Second}, `"p";q=3;w=10`}, // interval 3.33…s: exact from Period
		{ratelimit.Config{Limit: 1, Period: time.Second, Burst: 5}, `"p";q=5;w=5`},
		{ratelimit.Config{Limit: 10, Period: 500 * time.Millisecond, Algorithm: ratelimit.FixedWindow}, `"p";q=10`},
		{ratelimit.Config{Limit: 5, Period: 90 * time.Second, Algorithm: ratelimit.SlidingWindow}, `"p";q=5;w=90`},
	} {
		c.cfg.Name, c.cfg.Backend = "p", b
		l, err := ratelimit.New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		mw, _ := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: func(*http.Request) (string, bool) { return "k", true }})
		rec := httptest.NewRecorder()
		mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if got := rec.Header().Get("RateLimit-Policy"); got != c.want {
			t.Errorf("%+v: got %s, want %s", c.cfg, got, c.want)
		}
	}
}
