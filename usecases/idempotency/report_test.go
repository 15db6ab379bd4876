package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// A completion the store ignores — the first attempt outlived its lease,
// a duplicate recovered the claim and completed first — is not silent:
// Do returns the outcome that stands and reports the ignored one with the
// store key.
func TestDoReportsIgnoredCompletion(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	logs, logger := storetest.NewLogs()
	var hooked []error
	s, _ := idempotency.New(idempotency.Config{Backend: b, Lease: time.Second, Logger: logger,
		OnError: func(_ context.Context, key string, err error) { hooked = append(hooked, err) },
		Recover: func(context.Context, idempotency.Key, string) ([]byte, bool, error) { return nil, false, nil }})
	ctx := context.Background()
	k := idempotency.Key{Scope: "acct", Operation: "charge", Key: "k1"}
	res, _, err := s.Do(ctx, k, nil, func(context.Context) ([]byte, error) {
		clk.Advance(2 * time.Second) // the first attempt stalls past its lease
		if res, _, err := s.Do(ctx, k, nil, func(context.Context) ([]byte, error) { return []byte("second"), nil }); string(res) != "second" || err != nil {
			t.Errorf("recovering duplicate: got (%q, %v), want (second, nil)", res, err)
		}
		return []byte("first"), nil
	})
	if string(res) != "second" || err != nil {
		t.Fatalf("first attempt: got (%q, %v), want the outcome that stands (second, nil)", res, err)
	}
	recs := logs.Records()
	if len(recs) != 1 || !strings.Contains(recs[0].Msg, "completion ignored") || recs[0].Attrs["key"] != s.StoreKey(k) || recs[0].Attrs["operation"] != "charge" {
		t.Fatalf("records: got %v, want one \"completion ignored\" with the store key", recs)
	}
	if len(hooked) != 1 || !errors.Is(hooked[0], idempotency.ErrCompletedElsewhere) {
		t.Errorf("hook: got %v, want one ErrCompletedElsewhere", hooked)
	}
}

// A store failure is reported with the store key (a hash: neither the
// caller's key nor its scope appears).
func TestStoreFailureIsReported(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	logs, logger := storetest.NewLogs()
	s, _ := idempotency.New(idempotency.Config{Backend: flaky, Logger: logger})
	flaky.Down.Store(true)
	k := idempotency.Key{Scope: "alice@example.com", Operation: "charge", Key: "secret-key"}
	if _, err := s.Claim(context.Background(), k, nil); err == nil {
		t.Fatal("claim with the store down: got nil, want an error")
	}
	recs := logs.Records()
	if len(recs) != 1 || recs[0].Attrs["key"] != s.StoreKey(k) || !strings.Contains(recs[0].Attrs["err"], "injected failure") {
		t.Fatalf("records: got %v, want one with the store key and the cause", recs)
	}
	for a, v := range recs[0].Attrs {
		if strings.Contains(v, "secret") || strings.Contains(v, "alice") {
			t.Errorf("attribute %s = %q logs caller input", a, v)
		}
	}
}

// The middleware reports, through its Options, a response it could not
// record for duplicates: the handler outlived its lease and a duplicate
// recovered and completed first.
func TestMiddlewareReportsIgnoredCompletion(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	s, _ := idempotency.New(idempotency.Config{Backend: b, Lease: time.Second})
	logs, logger := storetest.NewLogs()
	var hooked []error
	mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "acct" },
		Options: httpmw.Options{Logger: logger, OnError: func(_ *http.Request, err error) { hooked = append(hooked, err) }}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(h http.Handler) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/charge", strings.NewReader("10"))
		req.Header.Set("Idempotency-Key", "k1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	var h http.Handler
	h = mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(idempotency.RecoveryHeader) != "" {
			w.Write([]byte("second"))
			return
		}
		clk.Advance(2 * time.Second)
		if rec := send(h); rec.Body.String() != "second" {
			t.Errorf("recovering duplicate: got %q, want second", rec.Body)
		}
		w.Write([]byte("first"))
	}))
	send(h)
	if rec := send(h); rec.Body.String() != "second" {
		t.Errorf("later duplicate: got %q, want the stored second", rec.Body)
	}
	recs := logs.Records()
	if len(recs) != 1 || !strings.Contains(recs[0].Msg, "completion ignored") || recs[0].Attrs["key"] != s.StoreKey(idempotency.Key{Scope: "acct", Operation: "POST /charge", Key: "k1"}) {
		t.Fatalf("records: got %v, want one \"completion ignored\" with the store key", recs)
	}
	if len(hooked) != 1 || !errors.Is(hooked[0], idempotency.ErrCompletedElsewhere) {
		t.Errorf("hook: got %v, want one ErrCompletedElsewhere", hooked)
	}
}
