package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// A handler that panics (net/http recovers it and drops the connection)
// leaves no outcome, as a crash does: duplicates get 409 while the lease
// runs, never a second run, and the first after it runs as a recovery.
// The claim is not held past the lease.
func TestPanickingHandlerLeavesARecovery(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	s, _ := idempotency.New(idempotency.Config{Backend: b, Lease: time.Second})
	mw, _ := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "acct" }})
	runs := 0
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		if runs == 1 {
			panic(http.ErrAbortHandler)
		}
		prev, _ := idempotency.RecoveryFrom(r.Context())
		w.Write([]byte("recovered=" + prev))
	}))
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("panic: got %v, want the handler's", p)
			}
		}()
		sendKeyed(h, "/charge", "10")
	}()
	if rec := sendKeyed(h, "/charge", "10"); rec.Code != http.StatusConflict || runs != 1 {
		t.Errorf("duplicate within the lease: got %d after %d runs, want 409 after 1", rec.Code, runs)
	}
	clk.Advance(time.Second)
	if rec := sendKeyed(h, "/charge", "10"); rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "recovered=") || rec.Body.Len() == len("recovered=") || runs != 2 {
		t.Errorf("after the lease: got %d %q after %d runs, want a recovery run", rec.Code, rec.Body, runs)
	}
}

// Do's function that panics leaves no outcome either: a duplicate is
// ErrInProgress until the lease lapses, then a recovery.
func TestPanickingDoLeavesARecovery(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	s, _ := idempotency.New(idempotency.Config{Backend: b, Lease: time.Second})
	ctx, k := context.Background(), idempotency.Key{Scope: "acct", Operation: "charge", Key: "k1"}
	func() {
		defer func() { recover() }()
		s.Do(ctx, k, nil, func(context.Context) ([]byte, error) { panic("boom") })
	}()
	ran := false
	if _, _, err := s.Do(ctx, k, nil, func(context.Context) ([]byte, error) { ran = true; return nil, nil }); !errors.Is(err, idempotency.ErrInProgress) || ran {
		t.Errorf("duplicate within the lease: got %v, ran %v; want ErrInProgress, not run", err, ran)
	}
	clk.Advance(time.Second)
	if _, _, err := s.Do(ctx, k, nil, func(context.Context) ([]byte, error) { ran = true; return nil, nil }); !errors.Is(err, idempotency.ErrNeedsRecovery) || ran {
		t.Errorf("after the lease, no Recover hook: got %v, ran %v; want ErrNeedsRecovery, not run", err, ran)
	}
}

// The key is scoped to the method and path: the same Idempotency-Key on
// another method or path is another key (it runs), while another query or
// body on the same method and path is a mismatch (422).
func TestKeyIsScopedToMethodAndPath(t *testing.T) {
	mw, _ := newReplayMiddleware(t)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ran " + r.Method + " " + r.URL.RequestURI()))
	}))
	cases := []struct {
		method, target, body string
		code                 int
		body0                string
	}{
		{"POST", "/a", "1", 200, "ran POST /a"},
		{"PUT", "/a", "1", 200, "ran PUT /a"},
		{"POST", "/b", "1", 200, "ran POST /b"},
		{"POST", "/a?x=1", "1", 422, "Idempotency-Key reused with a different request\n"},
		{"POST", "/a", "2", 422, "Idempotency-Key reused with a different request\n"},
		{"POST", "/a", "1", 200, "ran POST /a"},
	}
	for i, c := range cases {
		req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
		req.Header.Set("Idempotency-Key", "k1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code || rec.Body.String() != c.body0 {
			t.Errorf("step %d, %s %s %q: got %d %q, want %d %q", i, c.method, c.target, c.body, rec.Code, rec.Body, c.code, c.body0)
		}
	}
}
