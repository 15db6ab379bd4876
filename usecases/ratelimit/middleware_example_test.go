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
		fmt.Printf("%d RateLimit-Policy: %s RateLimit: %s Retry-After: %q\n", rec.Code, rec.Header().Get("RateLimit-Policy"), rec.Header().Get("RateLimit"), rec.Header().Get("Retry-After"))
	}
	// Output:
	// 200 RateLimit-Policy: "api";q=2;w=60 RateLimit: "api";r=1;t=60 Retry-After: ""
	// 200 RateLimit-Policy: "api";q=2;w=60 RateLimit: "api";r=0;t=60 Retry-After: ""
	// 429 RateLimit-Policy: "api";q=2;w=60 RateLimit: "api";r=0;t=60 Retry-After: "60"
}
