package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func ExampleNewMiddleware() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	l, _ := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 2, Period: time.Minute})
	byToken := func(r *http.Request) (string, bool) {
		tok := r.Header.Get("Authorization")
		return tok, tok != ""
	}
	mw, err := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: byToken})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "results")
	}))
	for range 3 {
		req := httptest.NewRequest("GET", "/search", nil)
		req.Header.Set("Authorization", "Bearer t1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%d remaining=%s reset=%s retry-after=%q\n", rec.Code, rec.Header().Get("RateLimit-Remaining"), rec.Header().Get("RateLimit-Reset"), rec.Header().Get("Retry-After"))
	}
	// Output:
	// 200 remaining=1 reset=60 retry-after=""
	// 200 remaining=0 reset=60 retry-after=""
	// 429 remaining=0 reset=60 retry-after="60"
}
