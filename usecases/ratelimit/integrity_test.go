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
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// A record the limiter cannot read (tampered with, or a foreign value at
// its key: here a plain Set of garbage) is an integrity failure, not an
// availability one: even a FailOpen limiter denies, or whoever can make a
// key's record unreadable gets unlimited requests. AllowN, WaitN and the
// middleware all refuse; the error wraps ErrStore and store.ErrCorrupt,
// and is reported and counted as a store error. An available store
// failure still fails open (TestFailOpen covers that).
func TestCorruptRecordIsNeverAdmitted(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingWindow} {
		for _, mode := range []ratelimit.FailureMode{ratelimit.FailOpen, ratelimit.FailClosed} {
			b, _ := storetest.NewEmbedded(t)
			logs, logger := storetest.NewLogs()
			l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Algorithm: alg, Limit: 2, Period: time.Hour,
				OnStoreError: mode, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, _, err := b.Set(ctx, l.Key("10.0.0.1"), []byte("garbage"), store.SetOptions{TTL: store.NoTTL}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				r, err := l.Allow(ctx, "10.0.0.1")
				if r.Allowed || !r.Degraded || !errors.Is(err, ratelimit.ErrStore) || !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("%v, mode %d, Allow %d on a corrupt record: got (%+v, %v), want denied, degraded, wrapping ErrStore and store.ErrCorrupt", alg, mode, i, r, err)
				}
			}
			if err := l.Wait(ctx, "10.0.0.1"); !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("%v, mode %d, Wait on a corrupt record: got %v, want an error wrapping store.ErrCorrupt", alg, mode, err)
			}
			if got := maps.Collect(l.Events()); got["allowed"] != 0 || got["store_error"] != 4 {
				t.Errorf("%v, mode %d, Events: got %v, want 0 allowed, 4 store errors", alg, mode, got)
			}
			if n := len(logs.Records()); n != 4 {
				t.Errorf("%v, mode %d: got %d records, want 4", alg, mode, n)
			}
			mw, err := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: func(*http.Request) (string, bool) { return "10.0.0.1", true }, Options: httpmw.Options{}})
			if err != nil {
				t.Fatal(err)
			}
			ran := false
			rec := httptest.NewRecorder()
			mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if ran || rec.Code != http.StatusServiceUnavailable {
				t.Errorf("%v, mode %d, middleware on a corrupt record: handler ran %v, status %d; want not run, 503", alg, mode, ran, rec.Code)
			}
			// Another key of the same limiter is unaffected.
			if r, err := l.Allow(ctx, "10.0.0.2"); !r.Allowed || err != nil {
				t.Errorf("%v, mode %d, Allow of a sound key: got (%+v, %v), want allowed", alg, mode, r, err)
			}
		}
	}
}
