package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/idempotency"
)

// catalog shows the cache use case: a slow product lookup read through a
// cache with negative caching, refresh ahead, invalidation and stats.
func catalog(ctx context.Context, w *world) error {
	prices := map[string]string{"kettle": "39.90", "toaster": "24.50"}
	var lookups atomic.Int64 // the refresh loads on its own goroutine
	c, err := cache.New(cache.Config{
		Name:         "products",
		Backend:      w.b,
		TTL:          10 * time.Minute, // a price may be served at most this long…
		RefreshAfter: 8 * time.Minute,  // …and is refreshed in the background after this
		NoJitter:     true,             // exact times for the demo; keep the ±10% jitter in production
		NegativeTTL:  time.Minute,
		Load: func(_ context.Context, sku string) ([]byte, bool, error) {
			lookups.Add(1)
			v, ok := prices[sku]
			return []byte(v), ok, nil
		},
	})
	if err != nil {
		return err
	}
	defer c.Close()
	get := func(sku string) error {
		before := lookups.Load()
		v, ok, err := c.Get(ctx, sku)
		if err != nil {
			return err
		}
		from := "cache"
		if lookups.Load() > before {
			from = "catalog database"
		}
		if !ok {
			w.say("GET %s → not found (from %s)", sku, from)
			return nil
		}
		w.say("GET %s → %s (from %s)", sku, v, from)
		return nil
	}
	steps := []struct {
		advance time.Duration
		note    string
		sku     string
	}{
		{0, "", "kettle"},
		{0, "", "kettle"},
		{0, "a bot probes a SKU that does not exist", "kettle-pro"},
		{0, "", "kettle-pro"},
	}
	for _, s := range steps {
		w.clk.Advance(s.advance)
		if s.note != "" {
			w.say("%s", s.note)
		}
		if err := get(s.sku); err != nil {
			return err
		}
	}
	w.clk.Advance(9 * time.Minute)
	prices["kettle"] = "34.90"
	w.say("9 minutes later the kettle is on sale; its entry is older than RefreshAfter (8m)")
	v, _, err := c.Get(ctx, "kettle")
	if err != nil {
		return err
	}
	w.say("GET kettle → %s (the aged price, at once; a background refresh fetches the new one)", v)
	c.Close() // waits for the background refresh (a demo needs it done)
	if err := get("kettle"); err != nil {
		return err
	}
	if err := get("toaster"); err != nil {
		return err
	}
	prices["toaster"] = "19.90"
	w.say("the toaster's price changes in the admin UI, which invalidates it")
	if err := c.Invalidate(ctx, "toaster"); err != nil {
		return err
	}
	if err := get("toaster"); err != nil {
		return err
	}
	st := c.Stats()
	w.say("stats: %d hits, %d misses, %d loads, %d background refresh(es)", st.Hits, st.Misses, st.Loads, st.Refreshes)
	return nil
}

// doubleClick shows the concurrent-duplicate path of idempotency: a second
// request with the same key while the first is still running is refused
// with 409 and Retry-After (it is not run), and the retry after the first
// finished gets the stored response.
func doubleClick(ctx context.Context, w *world) error {
	s, err := idempotency.New(idempotency.Config{Backend: w.b, Retention: 24 * time.Hour, Lease: 30 * time.Second})
	if err != nil {
		return err
	}
	charges := 0
	entered, release := make(chan struct{}), make(chan struct{})
	pay := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		charges++
		close(entered)
		<-release // the card network is slow
		body, _ := io.ReadAll(r.Body)
		rw.WriteHeader(http.StatusCreated)
		fmt.Fprintf(rw, `{"charge":"ch_%d","amount":%s}`, charges, body)
	})
	mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(r *http.Request) string { return r.Header.Get("X-Customer") }})
	if err != nil {
		return err
	}
	h := mw(pay)
	send := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader("1250"))
		req.Header.Set("X-Customer", "cust-4")
		req.Header.Set("Idempotency-Key", "order-2002")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	w.say("the customer double-clicks Pay: two POSTs with key order-2002")
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- send() }()
	<-entered
	rec := send()
	w.say("second click, while the first is charging → %d, Retry-After: %ss (not run)", rec.Code, rec.Header().Get("Retry-After"))
	close(release)
	rec = <-first
	w.say("first click → %d %s", rec.Code, strings.TrimSpace(rec.Body.String()))
	w.clk.Advance(time.Second)
	rec = send()
	extra := ""
	if rec.Header().Get(idempotency.ReplayedHeader) != "" {
		extra = " (replayed)"
	}
	w.say("the browser retries after Retry-After → %d %s%s", rec.Code, strings.TrimSpace(rec.Body.String()), extra)
	w.say("card charged %d time(s)", charges)
	return nil
}
