package idempotency_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func ExampleNewMiddleware() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	s, _ := idempotency.New(idempotency.Config{Backend: b})
	orders := 0
	// Scope is the authenticated caller (here a header your auth layer
	// sets), so that two callers' keys never collide.
	mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(r *http.Request) string { return r.Header.Get("X-Account") }})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		orders++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "order %d", orders)
	}))
	for _, body := range []string{"2 kettles", "2 kettles", "9 kettles"} {
		req := httptest.NewRequest("POST", "/orders", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", "a1b2")
		req.Header.Set("X-Account", "acct-42")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%d %s replayed=%q\n", rec.Code, strings.TrimSpace(rec.Body.String()), rec.Header().Get(idempotency.ReplayedHeader))
	}
	// Output:
	// 201 order 1 replayed=""
	// 201 order 1 replayed="true"
	// 422 Idempotency-Key reused with a different request replayed=""
}
