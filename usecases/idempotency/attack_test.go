package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// A client cannot forge the Idempotency-Recovery header on a request that
// passes straight through the middleware either (no Idempotency-Key where
// none is required): the handler never sees a recovery header it did not
// get from the middleware.
func TestRecoveryHeaderCannotBeForgedOnPassThrough(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	s, _ := idempotency.New(idempotency.Config{Backend: b})
	mw, _ := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "acct" }})
	var seen []string
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Values(idempotency.RecoveryHeader)
	}))
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		req := httptest.NewRequest(method, "/charge", strings.NewReader("10"))
		req.Header.Set(idempotency.RecoveryHeader, "forged")
		h.ServeHTTP(httptest.NewRecorder(), req)
		if len(seen) != 0 {
			t.Errorf("%s without Idempotency-Key: handler saw %s %q, want none", method, idempotency.RecoveryHeader, seen)
		}
	}
}
