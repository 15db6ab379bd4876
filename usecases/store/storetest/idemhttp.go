package storetest

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/idempotency"
)

// runIdempotencyOutcome checks that an outcome recorded after the side
// effect survives the caller going away, and that the middleware refuses
// configurations that would break its promises.
func runIdempotencyOutcome(t *testing.T, newFixture NewFunc) {
	scope := func(r *http.Request) string { return r.Header.Get("X-Account") }
	t.Run("ClientDisconnectRunsOnce", func(t *testing.T) {
		f := newFixture(t)
		u := f.unit()
		s, err := idempotency.New(idempotency.Config{Backend: f.Backend, Retention: 100 * u, Lease: 10 * u})
		if err != nil {
			t.Fatal(err)
		}
		var charges counter
		charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if charges.Add(1) == 1 {
				gone(t, r) // the card is charged while the client gives up
			}
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "charged")
		})
		mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		srv, served := disconnectServer(t, mw(charge))
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charge", strings.NewReader("100 EUR"))
		req.Header.Set("Idempotency-Key", "k1")
		req.Header.Set("X-Account", "acct-1")
		impatientDo(t, req)
		<-served
		hdr := map[string]string{"Idempotency-Key": "k1", "X-Account": "acct-1"}
		check := func(when string) {
			t.Helper()
			status, body, h := send(t, http.MethodPost, srv.URL+"/charge", "100 EUR", hdr)
			<-served
			if status != http.StatusCreated || body != "charged" || h.Get(idempotency.ReplayedHeader) != "true" || charges.Load() != 1 {
				t.Errorf("retry %s: got (%d, %q, replayed %q) after %d charges, want the replayed 201 after 1 charge",
					when, status, body, h.Get(idempotency.ReplayedHeader), charges.Load())
			}
		}
		check("after the disconnect")
		if f.Advance != nil {
			f.Advance(11 * u) // past the lease: an unfinished claim would now be re-run
			check("after the lease")
		}
	})
	t.Run("DoCompletesAfterCancel", func(t *testing.T) {
		f := newFixture(t)
		u := f.unit()
		s, _ := idempotency.New(idempotency.Config{Backend: f.Backend, Retention: 100 * u, Lease: 10 * u})
		k := idempotency.Key{Scope: "acct-1", Operation: "charge", Key: "cancelled"}
		ctx, cancel := context.WithCancel(context.Background())
		var calls int
		charge := func(context.Context) ([]byte, error) {
			calls++
			cancel() // the caller gives up after the side effect
			return []byte("receipt"), nil
		}
		res, _, err := s.Do(ctx, k, nil, charge)
		if string(res) != "receipt" || err != nil {
			t.Fatalf("Do whose caller cancelled after the side effect: got (%q, %v), want (\"receipt\", nil)", res, err)
		}
		if f.Advance != nil {
			f.Advance(11 * u)
		}
		res, replayed, err := s.Do(context.Background(), k, nil, charge)
		if string(res) != "receipt" || !replayed || err != nil || calls != 1 {
			t.Errorf("retry: got (%q, replayed %v, %v) after %d calls, want the replayed receipt after 1 call", res, replayed, err, calls)
		}
	})
	t.Run("MiddlewareRefusesBadConfig", func(t *testing.T) {
		f := newFixture(t)
		s, _ := idempotency.New(idempotency.Config{Backend: f.Backend})
		cases := []struct {
			name string
			cfg  idempotency.MiddlewareConfig
		}{
			{"no store", idempotency.MiddlewareConfig{Scope: scope}},
			{"no scope", idempotency.MiddlewareConfig{Store: s}},
			{"negative MaxBody", idempotency.MiddlewareConfig{Store: s, Scope: scope, MaxBody: -1}},
			{"MaxBody at the int64 limit", idempotency.MiddlewareConfig{Store: s, Scope: scope, MaxBody: math.MaxInt64}},
		}
		for _, c := range cases {
			if _, err := idempotency.NewMiddleware(c.cfg); !errors.Is(err, idempotency.ErrInvalidConfig) {
				t.Errorf("NewMiddleware(%s): got %v, want ErrInvalidConfig", c.name, err)
			}
		}
	})
	t.Run("ScopedByDefault", func(t *testing.T) {
		f := newFixture(t)
		s, _ := idempotency.New(idempotency.Config{Backend: f.Backend})
		mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "balance of "+r.Header.Get("X-Account"))
		}))
		srv, served := disconnectServer(t, h)
		for _, acct := range []string{"alice", "bob"} {
			_, body, _ := send(t, http.MethodPost, srv.URL+"/balance", "same", map[string]string{"Idempotency-Key": "same-key", "X-Account": acct})
			<-served
			if body != "balance of "+acct {
				t.Errorf("%s with another caller's key and body: got %q, want %q", acct, body, "balance of "+acct)
			}
		}
	})
}
