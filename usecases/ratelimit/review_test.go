package ratelimit_test

import (
	"context"
	"errors"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New refuses counts that a backend may not compute exactly (Redis counts
// in doubles, and times in microseconds): accepted, they would be refused
// by such a backend at every call, and the limiter would then deny
// everything (FailClosed) or admit everything (FailOpen). The largest
// portable values are accepted.
func TestNewRefusesCountsBackendsCannotCompute(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	cases := []struct {
		name string
		cfg  ratelimit.Config
		ok   bool
	}{
		{"fixed window Limit MaxInt64", ratelimit.Config{Algorithm: ratelimit.FixedWindow, Limit: math.MaxInt64, Period: time.Minute}, false},
		{"fixed window Limit 2^52+1", ratelimit.Config{Algorithm: ratelimit.FixedWindow, Limit: 1<<52 + 1, Period: time.Minute}, false},
		{"fixed window Limit 2^52", ratelimit.Config{Algorithm: ratelimit.FixedWindow, Limit: 1 << 52, Period: time.Minute}, true},
		{"token bucket 1e16 per 1e16 ns (interval 1 ns)", ratelimit.Config{Limit: 1e16, Period: 1e16}, false},
		{"token bucket interval 1001 ns, Burst × 2 µs over 100 years", ratelimit.Config{Limit: 3e15, Period: 3e15 * 1001}, false},
		{"token bucket Burst × 1 µs = 100 years", ratelimit.Config{Limit: int64(store.MaxTTL / time.Microsecond), Period: store.MaxTTL}, true},
		{"token bucket a million a second", ratelimit.Config{Limit: 1e6, Period: time.Second}, true},
		{"token bucket a billion a second, burst 10", ratelimit.Config{Limit: 1e9, Burst: 10, Period: time.Second}, true},
	}
	for _, c := range cases {
		c.cfg.Backend, c.cfg.Name = b, "n"
		_, err := ratelimit.New(c.cfg)
		if c.ok && err != nil {
			t.Errorf("%s: got %v, want accepted", c.name, err)
		}
		if !c.ok && !errors.Is(err, ratelimit.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", c.name, err)
		}
	}
}

// A request the store refuses as invalid (here: its key is longer than the
// store accepts) is not a store failure a FailOpen limiter may answer by
// admitting: the caller, maybe an attacker, chose it. It is denied, by
// AllowN, WaitN and the middleware, reported and counted as a store error.
func TestRequestTheStoreRefusesIsNeverAdmitted(t *testing.T) {
	// An engine that takes keys of up to 16 bytes: the limiter's key for
	// "k", "tide:rl:api:tb:{k:k}", is 20.
	e, err := engine.New(engine.Config{MaxKeySize: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	b, err := embedded.New(embedded.Config{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	logs, logger := storetest.NewLogs()
	l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Limit: 2, Period: time.Hour,
		OnStoreError: ratelimit.FailOpen, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		r, err := l.Allow(ctx, "k")
		if r.Allowed || !errors.Is(err, ratelimit.ErrStore) || !errors.Is(err, store.ErrKeyTooLarge) {
			t.Fatalf("Allow %d: got (%+v, %v), want denied with an error wrapping ErrStore and store.ErrKeyTooLarge", i, r, err)
		}
	}
	if err := l.Wait(ctx, "k"); !errors.Is(err, store.ErrKeyTooLarge) {
		t.Errorf("Wait: got %v, want an error wrapping store.ErrKeyTooLarge", err)
	}
	if got := maps.Collect(l.Events()); got["allowed"] != 0 || got["store_error"] != 4 {
		t.Errorf("Events: got %v, want 0 allowed, 4 store errors", got)
	}
	if recs := logs.Records(); len(recs) != 4 || !strings.Contains(recs[0].Msg, "denied") {
		t.Errorf("records: got %v, want 4 saying the event was denied", recs)
	}
	mw, _ := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: func(*http.Request) (string, bool) { return "k", true }, Options: httpmw.Options{}})
	ran := false
	rec := httptest.NewRecorder()
	mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if ran || rec.Code != http.StatusServiceUnavailable {
		t.Errorf("middleware: handler ran %v, status %d; want not run, 503", ran, rec.Code)
	}
}

// A Reset whose caller went away is not a store failure: it returns the
// context's error, and is neither reported nor wrapped in ErrStore.
func TestResetCancelledIsNotAStoreFailure(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	logs, logger := storetest.NewLogs()
	hooked := 0
	l, _ := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Limit: 1, Period: time.Hour, Logger: logger,
		OnError: func(context.Context, string, error) { hooked++ }})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := l.Reset(ctx, "k")
	if !errors.Is(err, context.Canceled) || errors.Is(err, ratelimit.ErrStore) {
		t.Errorf("Reset with a cancelled context: got %v, want context.Canceled, not ErrStore", err)
	}
	if n := len(logs.Records()); n != 0 || hooked != 0 {
		t.Errorf("Reset with a cancelled context: %d records, %d hook calls; want none", n, hooked)
	}
}

// New refuses a Prefix with '{': Key promises the caller's key is the
// key's Redis Cluster hash tag, which a brace in the prefix would replace
// (every key of the limiter then in one slot).
func TestNewRefusesPrefixWithBrace(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for _, c := range []struct {
		prefix string
		ok     bool
	}{
		{"{app}:", false},
		{"app:{", false},
		{"app:rl:", true},
	} {
		_, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Prefix: c.prefix, Limit: 1, Period: time.Second})
		if c.ok && err != nil || !c.ok && !errors.Is(err, ratelimit.ErrInvalidConfig) {
			t.Errorf("Prefix %q: got %v, want accepted %v (else ErrInvalidConfig)", c.prefix, err, c.ok)
		}
	}
}

// A request whose context ends during the decision while its client is
// still there (a server-side deadline set by an outer middleware) must not
// get an empty 200 as though it had been served: the handler did not run.
// It gets a refusal, and nothing is reported (not a store failure).
func TestMiddlewareContextEndedDuringDecisionIsRefused(t *testing.T) {
	for _, mode := range []ratelimit.FailureMode{ratelimit.FailOpen, ratelimit.FailClosed} {
		b, _ := storetest.NewEmbedded(t)
		reqCtx, cancel := context.WithCancelCause(context.Background())
		l, _ := ratelimit.New(ratelimit.Config{Name: "api", Backend: &cancelling{Backend: b, cancel: func() { cancel(context.DeadlineExceeded) }},
			Limit: 5, Period: time.Minute, OnStoreError: mode})
		reported := 0
		var got httpmw.Problem
		mw, err := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: func(*http.Request) (string, bool) { return "10.0.0.1", true },
			Options: httpmw.Options{OnError: func(*http.Request, error) { reported++ },
				Responder: httpmw.ResponderFunc(func(w http.ResponseWriter, r *http.Request, p httpmw.Problem) {
					got = p
					httpmw.PlainText.Respond(w, r, p)
				})}})
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		rec := httptest.NewRecorder()
		mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil).WithContext(reqCtx))
		if ran || rec.Code != http.StatusServiceUnavailable || !errors.Is(got.Err, context.DeadlineExceeded) || reported != 0 {
			t.Errorf("mode %d: handler ran %v, status %d, problem %+v, %d reports; want not run, 503 wrapping the context's cause, none reported",
				mode, ran, rec.Code, got, reported)
		}
	}
}
