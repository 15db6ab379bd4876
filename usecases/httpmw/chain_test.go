package httpmw_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// chain composes middlewares the way alice does: the first one listed is
// the outermost.
func chain(mws ...func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
}

// stack builds the rate-limit and idempotency middlewares over one
// embedded backend with the given Options, and a counting handler.
func stack(t *testing.T, opts httpmw.Options) (rl, idem func(http.Handler) http.Handler, charge http.Handler, charges *atomic.Int64) {
	t.Helper()
	b, _ := storetest.NewEmbedded(t)
	l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 3, Period: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rl, err = ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: func(r *http.Request) (string, bool) {
		return r.Header.Get("X-Account"), true
	}, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	s, err := idempotency.New(idempotency.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	idem, err = idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(r *http.Request) string {
		return r.Header.Get("X-Account")
	}, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	charges = new(atomic.Int64)
	charge = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "charged %s #%d", body, charges.Add(1))
	})
	return rl, idem, charge, charges
}

type reply struct {
	code        int
	contentType string
	body        string
}

func send(h http.Handler, method, path, key, body string) reply {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Account", "acct-1")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return reply{rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()}
}

// The middlewares share one shape, func(http.Handler) http.Handler, so
// they compose on the standard mux and in an alice-style chain, and every
// refusal they make is plain text unless a Responder is configured.
func TestMiddlewaresChainAndDefaultToPlainText(t *testing.T) {
	const plain = "text/plain; charset=utf-8"
	build := map[string]func(rl, idem func(http.Handler) http.Handler, charge http.Handler) http.Handler{
		"ServeMux": func(rl, idem func(http.Handler) http.Handler, charge http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("POST /charge", rl(idem(charge)))
			return mux
		},
		"alice-style chain": func(rl, idem func(http.Handler) http.Handler, charge http.Handler) http.Handler {
			return chain(rl, idem)(charge)
		},
	}
	for name, mk := range build {
		t.Run(name, func(t *testing.T) {
			rl, idem, charge, charges := stack(t, httpmw.Options{})
			h := mk(rl, idem, charge)
			steps := []struct {
				key, body string
				want      reply
			}{
				{"", "10", reply{400, plain, "Idempotency-Key header required\n"}},
				{"k1", "10", reply{201, "", "charged 10 #1"}},
				{"k1", "10", reply{201, "", "charged 10 #1"}}, // replayed
				{"k1", "99", reply{429, plain, "too many requests\n"}},
			}
			for i, s := range steps {
				if got := send(h, "POST", "/charge", s.key, s.body); got != s.want {
					t.Errorf("step %d: got %+v, want %+v", i, got, s.want)
				}
			}
			if charges.Load() != 1 {
				t.Errorf("charges: got %d, want 1", charges.Load())
			}
		})
	}
}

// A Responder chosen per status answers the refusals of every middleware
// in the chain; statuses without one stay plain text.
func TestMiddlewaresUseTheResponderPerStatus(t *testing.T) {
	custom := httpmw.ByStatus(map[int]httpmw.Responder{
		http.StatusTooManyRequests: httpmw.ProblemJSON,
		http.StatusUnprocessableEntity: httpmw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, _ := httpmw.ProblemFrom(r.Context())
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(p.Status)
			fmt.Fprintf(w, "<p>%s</p>", p.Message)
		})),
	})
	rl, idem, charge, _ := stack(t, httpmw.Options{Responder: custom})
	h := chain(rl, idem)(charge)
	steps := []struct {
		key, body string
		want      reply
	}{
		{"k1", "10", reply{201, "", "charged 10 #1"}},
		{"k1", "99", reply{422, "text/html", "<p>Idempotency-Key reused with a different request</p>"}},
		{"", "10", reply{400, "text/plain; charset=utf-8", "Idempotency-Key header required\n"}},
		{"k2", "10", reply{429, "application/problem+json", `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"too many requests"}`}},
	}
	for i, s := range steps {
		if got := send(h, "POST", "/charge", s.key, s.body); got != s.want {
			t.Errorf("step %d: got %+v, want %+v", i, got, s.want)
		}
	}
}
