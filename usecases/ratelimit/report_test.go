package ratelimit_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// A store failure is never swallowed: the Limiter logs it with the key,
// the cause and the decision taken, and calls its hook; a key that is not
// an IP address (it may be a token) is never logged as it is.
func TestStoreFailureIsReportedWithKeyAndDecision(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	flaky.Down.Store(true)
	for _, c := range []struct {
		mode     ratelimit.FailureMode
		key      string
		wantKey  string
		wantWord string
	}{
		{ratelimit.FailOpen, "203.0.113.7", "203.0.113.7", "fail open"},
		{ratelimit.FailClosed, "2001:db8::/64", "2001:db8::/64", "fail closed"},
		{ratelimit.FailOpen, "Bearer secret-token", "sha256:", "fail open"},
	} {
		logs, logger := storetest.NewLogs()
		var mu sync.Mutex
		var hooked []string
		l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: flaky, Limit: 5, Period: time.Minute, OnStoreError: c.mode,
			Logger: logger, OnError: func(_ context.Context, key string, err error) {
				mu.Lock()
				hooked = append(hooked, key)
				mu.Unlock()
			}})
		if err != nil {
			t.Fatal(err)
		}
		l.Allow(context.Background(), c.key)
		recs := logs.Records()
		if len(recs) != 1 {
			t.Fatalf("key %q: got %d records, want 1", c.key, len(recs))
		}
		r := recs[0]
		if !strings.HasPrefix(r.Attrs["key"], c.wantKey) || !strings.Contains(r.Msg, c.wantWord) ||
			!strings.Contains(r.Attrs["err"], "injected failure") || r.Attrs["limiter"] != "api" {
			t.Errorf("key %q: got %v %q %v, want key %q…, %q in the message and the cause", c.key, r.Level, r.Msg, r.Attrs, c.wantKey, c.wantWord)
		}
		for k, v := range r.Attrs {
			if strings.Contains(v, "secret") {
				t.Errorf("attribute %s = %q logs the caller's secret key", k, v)
			}
		}
		if len(hooked) != 1 || hooked[0] != r.Attrs["key"] {
			t.Errorf("key %q: hook got %q, want one call with %q", c.key, hooked, r.Attrs["key"])
		}
	}
}

// The middleware reports the store failures it decides around (fail open
// and fail closed) through its Options, with the request.
func TestMiddlewareReportsStoreFailure(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	flaky.Down.Store(true)
	for _, mode := range []ratelimit.FailureMode{ratelimit.FailOpen, ratelimit.FailClosed} {
		logs, logger := storetest.NewLogs()
		var hookErr error
		l, _ := ratelimit.New(ratelimit.Config{Name: "api", Backend: flaky, Limit: 5, Period: time.Minute, OnStoreError: mode})
		mw, err := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: func(*http.Request) (string, bool) { return "198.51.100.1", true },
			Options: httpmw.Options{Logger: logger, OnError: func(r *http.Request, err error) { hookErr = err }}})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		recs := logs.Records()
		if len(recs) != 1 || recs[0].Attrs["key"] != "198.51.100.1" || !errors.Is(hookErr, ratelimit.ErrStore) || !errors.Is(hookErr, store.ErrUnavailable) {
			t.Errorf("mode %d (status %d): got records %v and hook error %v, want one record with the key and ErrStore", mode, rec.Code, recs, hookErr)
		}
		if want := map[ratelimit.FailureMode]slog.Level{ratelimit.FailOpen: slog.LevelWarn, ratelimit.FailClosed: slog.LevelError}[mode]; len(recs) == 1 && recs[0].Level != want {
			t.Errorf("mode %d: got level %v, want %v", mode, recs[0].Level, want)
		}
	}
}
