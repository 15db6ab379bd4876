package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunRateLimit(t, storetest.Embedded)
}

func TestNewRejects(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	cases := []ratelimit.Config{
		{},
		{Backend: b, Limit: 1, Period: time.Second},              // no name
		{Backend: b, Limit: 1, Period: time.Second, Name: "a:b"}, // a name reaching into the key syntax
		{Backend: b, Limit: 1, Period: time.Second, Name: "{x}"}, // a name reaching into the hash tag
		{Backend: b, Limit: 1, Period: time.Second, Name: string(make([]byte, 65))},
		{Name: "n", Backend: b, Period: time.Second},
		{Name: "n", Backend: b, Limit: 1},
		{Name: "n", Backend: b, Limit: 1, Period: time.Second, Burst: -1},
		{Name: "n", Backend: b, Limit: 1, Period: time.Second, Algorithm: 7},
		{Name: "n", Backend: b, Limit: 1, Period: time.Second, OnStoreError: 9},
		{Name: "n", Backend: b, Limit: 10, Period: 5},
		{Name: "n", Backend: b, Limit: store.MaxSlidingLimit + 1, Period: time.Second, Algorithm: ratelimit.SlidingWindow},
	}
	for i, c := range cases {
		if _, err := ratelimit.New(c); !errors.Is(err, ratelimit.ErrInvalidConfig) {
			t.Errorf("case %d: got %v, want ErrInvalidConfig", i, err)
		}
	}
}

func TestStoreFailure(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	flaky.Down.Store(true)
	for _, c := range []struct {
		mode ratelimit.FailureMode
		want bool
	}{{ratelimit.FailClosed, false}, {ratelimit.FailOpen, true}} {
		l, err := ratelimit.New(ratelimit.Config{Name: "test", Backend: flaky, Limit: 5, Period: time.Minute, OnStoreError: c.mode})
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Allow(context.Background(), "k")
		if !errors.Is(err, ratelimit.ErrStore) || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("mode %d: got error %v, want ErrStore wrapping ErrUnavailable", c.mode, err)
		}
		if r.Allowed != c.want || !r.Degraded {
			t.Errorf("mode %d: got allowed %v degraded %v, want %v true", c.mode, r.Allowed, r.Degraded, c.want)
		}
	}
}

func TestMiddleware(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	l, _ := ratelimit.New(ratelimit.Config{Name: "test", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 2, Period: time.Minute})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	mw, err := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: func(r *http.Request) (string, bool) {
		k := r.Header.Get("X-Org")
		return k, k != ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(ok)
	do := func(org string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/", nil)
		if org != "" {
			req.Header.Set("X-Org", org)
		}
		h.ServeHTTP(rec, req)
		return rec
	}
	type want struct {
		code                 int
		policy, limit, retry string
	}
	const policy = `"test";q=2;w=60`
	steps := []struct {
		org     string
		advance time.Duration
		want    want
	}{
		{"a", 0, want{200, policy, `"test";r=1;t=60`, ""}},
		{"a", 10 * time.Second, want{200, policy, `"test";r=0;t=50`, ""}},
		{"a", 500 * time.Millisecond, want{429, policy, `"test";r=0;t=50`, "50"}},
		{"b", 0, want{200, policy, `"test";r=1;t=60`, ""}},
		{"", 0, want{200, "", "", ""}}, // exempt
		{"a", 50 * time.Second, want{200, policy, `"test";r=1;t=60`, ""}},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		rec := do(s.org)
		h := rec.Header()
		got := want{rec.Code, h.Get("RateLimit-Policy"), h.Get("RateLimit"), h.Get("Retry-After")}
		if got != s.want {
			t.Errorf("step %d: got %+v, want %+v", i, got, s.want)
		}
		for _, old := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
			if h.Get(old) != "" {
				t.Errorf("step %d: %s sent; the current draft defines only RateLimit and RateLimit-Policy", i, old)
			}
		}
	}
	// Fail closed → 503.
	flaky := &storetest.Flaky{Backend: b}
	flaky.Down.Store(true)
	l2, _ := ratelimit.New(ratelimit.Config{Name: "test", Backend: flaky, Limit: 2, Period: time.Minute})
	rec := httptest.NewRecorder()
	mw2, _ := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l2, Key: func(*http.Request) (string, bool) { return "x", true }})
	mw2(ok).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("store down, fail closed: got %d (Retry-After %q), want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestHugeKeyIsLimited(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	l, _ := ratelimit.New(ratelimit.Config{Name: "test", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 1, Period: time.Minute, OnStoreError: ratelimit.FailOpen})
	huge := strings.Repeat("k", 1<<20)
	if r, err := l.Allow(context.Background(), huge); !r.Allowed || err != nil {
		t.Fatalf("first request with a 1 MiB key: got (%v, %v), want allowed", r.Allowed, err)
	}
	if r, err := l.Allow(context.Background(), huge); r.Allowed || err != nil {
		t.Fatalf("second request with a 1 MiB key: got (%v, %v), want denied (not a fail-open store error)", r.Allowed, err)
	}
}
