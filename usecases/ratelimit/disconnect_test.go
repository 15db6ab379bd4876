package ratelimit_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// A client that goes away while its decision is in flight is neither
// admitted (not even by a fail-open limiter) nor reported or counted as a
// store failure: for AllowN and for the middleware.
func TestDisconnectIsNotAStoreFailure(t *testing.T) {
	for _, mode := range []ratelimit.FailureMode{ratelimit.FailOpen, ratelimit.FailClosed} {
		b, _ := storetest.NewEmbedded(t)
		ctx, cancel := context.WithCancel(context.Background())
		logs, logger := storetest.NewLogs()
		l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: &cancelling{Backend: b, cancel: cancel}, Limit: 5, Burst: 5, Period: time.Minute,
			OnStoreError: mode, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.AllowN(ctx, "10.0.0.1", 1)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ratelimit.ErrStore) || res.Allowed {
			t.Errorf("mode %d: AllowN after the caller left = %+v, %v; want not allowed, context.Canceled, not ErrStore", mode, res, err)
		}
		if got := maps.Collect(l.Events()); got["store_error"] != 0 || got["allowed"] != 0 {
			t.Errorf("mode %d: Events = %v, want no store_error and nothing allowed", mode, got)
		}
		if n := len(logs.Records()); n != 0 {
			t.Errorf("mode %d: %d records logged for a client that left, want 0", mode, n)
		}

		// The middleware: the handler does not run and nothing is reported.
		reqCtx, reqCancel := context.WithCancel(context.Background())
		l2, _ := ratelimit.New(ratelimit.Config{Name: "api2", Backend: &cancelling{Backend: b, cancel: reqCancel}, Limit: 5, Burst: 5, Period: time.Minute, OnStoreError: mode})
		var reported int
		mw, err := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l2, Key: func(*http.Request) (string, bool) { return "10.0.0.1", true }, Options: httpmw.Options{OnError: func(*http.Request, error) { reported++ }}})
		if err != nil {
			t.Fatal(err)
		}
		ran := false
		h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(reqCtx))
		if ran || reported != 0 {
			t.Errorf("mode %d: middleware for a client that left: handler ran %v, %d reports; want neither", mode, ran, reported)
		}
	}
}
