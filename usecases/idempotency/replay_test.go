package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// newReplayMiddleware returns the middleware over a fresh embedded store,
// scoped to one caller.
func newReplayMiddleware(t *testing.T) (func(http.Handler) http.Handler, *idempotency.Store) {
	t.Helper()
	b, _ := storetest.NewEmbedded(t)
	s, err := idempotency.New(idempotency.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "acct" }})
	if err != nil {
		t.Fatal(err)
	}
	return mw, s
}

func sendKeyed(h http.Handler, target, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	req.Header.Set("Idempotency-Key", "k1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A replay answers with the headers the first response had: a header the
// handler set replaces one of that name an outer middleware set before
// (as it does on the first response), it is not added after it. Before,
// the replay appended, and a Content-Type the handler set came second,
// after the outer default: Header.Get, and most clients, saw the default.
func TestReplayHeadersMatchTheFirstResponse(t *testing.T) {
	mw, _ := newReplayMiddleware(t)
	inner := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Vary", "Accept")
		w.Header().Add("Vary", "Accept-Language")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("{}"))
	}))
	outer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html") // a default the handler overrides
		w.Header().Set("Vary", "Origin")
		w.Header().Set("X-Frame-Options", "DENY") // one it leaves alone
		inner.ServeHTTP(w, r)
	})
	want := http.Header{"Content-Type": {"application/json"}, "Vary": {"Accept", "Accept-Language"}, "X-Frame-Options": {"DENY"}}
	for i, what := range []string{"first response", "replay"} {
		rec := sendKeyed(outer, "/charge", "10")
		if rec.Code != http.StatusCreated || (i == 1) != (rec.Header().Get(idempotency.ReplayedHeader) == "true") {
			t.Fatalf("%s: status %d, replayed %q", what, rec.Code, rec.Header().Get(idempotency.ReplayedHeader))
		}
		for name, vs := range want {
			if got := rec.Header().Values(name); !slices.Equal(got, vs) {
				t.Errorf("%s: %s = %q, want %q", what, name, got, vs)
			}
		}
	}
}

// An informational response (103 Early Hints) the handler sends before its
// final status is not the response's status: the first response and the
// replay both carry the final one. Before, the recorder took the 103 as
// the status, so the client got 200 (net/http's implicit status after a
// 1xx) and the replay a stored 103, then 200.
func TestInformationalStatusIsNotTheFinalStatus(t *testing.T) {
	mw, _ := newReplayMiddleware(t)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte("created"))
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, what := range []string{"first response", "replay"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader("1"))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("%s: status %d, want 201", what, resp.StatusCode)
		}
	}
}

// The key and fingerprint are the request target the client sent, not a
// router's rewrite of it: two APIs mounted with http.StripPrefix on one
// Store both see "/charge", and before, a request to /v2/charge with the
// key and body of an earlier /v1/charge was answered with v1's stored
// response, v2's handler never running.
func TestKeyIsTheTargetTheClientSent(t *testing.T) {
	mw, _ := newReplayMiddleware(t)
	mux := http.NewServeMux()
	for _, v := range []string{"v1", "v2"} {
		mux.Handle("/"+v+"/", http.StripPrefix("/"+v, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(v + " " + r.URL.Path))
		}))))
	}
	cases := []struct {
		target, want, replayed string
	}{
		{"/v1/charge", "v1 /charge", ""},
		{"/v2/charge", "v2 /charge", ""},
		{"/v1/charge", "v1 /charge", "true"},
		{"/v2/charge", "v2 /charge", "true"},
	}
	for i, c := range cases {
		rec := sendKeyed(mux, c.target, "10")
		if got := rec.Body.String(); got != c.want || rec.Header().Get(idempotency.ReplayedHeader) != c.replayed {
			t.Errorf("step %d, %s: got %d %q replayed %q, want %q replayed %q", i, c.target, rec.Code, got, rec.Header().Get(idempotency.ReplayedHeader), c.want, c.replayed)
		}
	}
}

// A recorded failure (Do with a Permanent error, or Fail, on the key the
// middleware uses: the outcomes mix) is replayed as a 500 whose message
// is safe to show the client (httpmw.Problem.Message): the failure's own
// text, which may carry internal detail, stays in Problem.Err. Before, the
// plain-text body was the cause's message.
func TestReplayedFailureHidesItsCause(t *testing.T) {
	mw, s := newReplayMiddleware(t)
	k := idempotency.Key{Scope: "acct", Operation: "POST /charge", Key: "k1"}
	fp := idempotency.Fingerprint([]byte("POST"), []byte("/charge"), []byte("10"))
	secret := "dial tcp 10.0.0.5:5432: password authentication failed for user billing"
	if _, _, err := s.Do(context.Background(), k, fp, func(context.Context) ([]byte, error) {
		return nil, idempotency.Permanent(errors.New(secret))
	}); !errors.Is(err, idempotency.ErrFailed) {
		t.Fatalf("Do: %v, want ErrFailed", err)
	}
	rec := sendKeyed(mw(http.NotFoundHandler()), "/charge", "10")
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "10.0.0.5") {
		t.Errorf("replayed failure: got %d %q, want 500 without the cause's detail", rec.Code, rec.Body)
	}
}
