// Command atlasmart runs tide's use cases end to end on the real
// engine with a manual clock, for a fictional shop, AtlasMart. Each scene
// prints what happens:
//
//  1. sessions: one that idles out, a sliding one stopped by its absolute
//     cap, a revoked one;
//  2. feature flags: a versioned change with its audit trail, a stale write
//     rejected, a kill switch;
//  3. a token bucket over time;
//  4. a payment charged once under a replayed request, and a reused key
//     with a different payload rejected;
//  5. a stale lease holder's write rejected by fencing;
//  6. the two-replica SMS budget: two per-process limiters admit twice the
//     budget, one shared limiter holds it.
//  7. a product cache: hits, a remembered miss, a price refreshed ahead
//     while the old one is served, an invalidation, the stats;
//  8. a double-clicked payment: the duplicate that arrives while the
//     first runs gets 409, the retry the stored response.
//  9. a restart: a payment completes on an engine with a durability log,
//     the process restarts on the same directory, the retry replays.
//
// Usage: go run ./cmd/atlasmart
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// world is one process: an engine on the shared manual clock and its
// backend.
type world struct {
	clk *clock.Manual
	e   *engine.Engine
	b   *embedded.Backend
}

func newWorld(clk *clock.Manual) (*world, error) {
	e, err := engine.New(engine.Config{Clock: clk, ExpiryInterval: -1})
	if err != nil {
		return nil, err
	}
	b, err := embedded.New(embedded.Config{Engine: e, Clock: clk})
	if err != nil {
		e.Close()
		return nil, err
	}
	return &world{clk: clk, e: e, b: b}, nil
}

func (w *world) now() string { return w.clk.Time().UTC().Format("15:04:05") }

func (w *world) say(format string, args ...any) {
	fmt.Fprintf(out, "  [%s] %s\n", w.now(), fmt.Sprintf(format, args...))
}

var out io.Writer = os.Stdout

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "atlasmart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	clk := clock.NewManual(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	w, err := newWorld(clk)
	if err != nil {
		return err
	}
	defer w.e.Close()
	scenes := []struct {
		title string
		fn    func(context.Context, *world) error
	}{
		{"Sessions", sessions},
		{"Feature flags", flags},
		{"Token bucket", tokenBucket},
		{"Payments (idempotency)", payments},
		{"Leases and fencing", leases},
		{"Two replicas, one SMS budget", smsBudget},
		{"Catalog cache", catalog},
		{"Double click (idempotency)", doubleClick},
		{"Restart (durability)", restart},
	}
	for i, s := range scenes {
		fmt.Fprintf(out, "\n== %d. %s ==\n", i+1, s.title)
		if err := s.fn(ctx, w); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	return nil
}

func sessions(ctx context.Context, w *world) error {
	m, err := session.New(session.Config{Backend: w.b, IdleTimeout: 15 * time.Minute, AbsoluteTimeout: time.Hour, TouchInterval: time.Minute})
	if err != nil {
		return err
	}
	load := func(who, id string) bool {
		_, ok, err := m.Load(ctx, id)
		if err != nil {
			w.say("%s: store error %v", who, err)
		}
		return ok
	}

	idle, err := m.Create(ctx, "ivy", "atlasmart", nil)
	if err != nil {
		return err
	}
	w.say("ivy signs in (idle timeout 15m, absolute 1h); cookie %s… (the store keeps only its hash)", idle.ID[:8])
	w.clk.Advance(16 * time.Minute)
	w.say("ivy comes back after 16 idle minutes: session valid = %v", load("ivy", idle.ID))

	slide, err := m.Create(ctx, "sam", "atlasmart", nil)
	if err != nil {
		return err
	}
	w.say("sam signs in, then clicks every 10 minutes")
	for range 7 {
		w.clk.Advance(10 * time.Minute)
		ok := load("sam", slide.ID)
		w.say("  sam clicks: session valid = %v", ok)
		if !ok {
			w.say("  the sliding idle timer never ran out, but the absolute 1h cap did")
			break
		}
	}

	rev, err := m.Create(ctx, "rita", "atlasmart", nil)
	if err != nil {
		return err
	}
	phone, _ := m.Create(ctx, "rita", "atlasmart", nil)
	list, _ := m.List(ctx, "rita")
	w.say("rita has %d sessions (laptop, phone); her password leaks", len(list))
	n, err := m.DestroyAll(ctx, "rita")
	if err != nil {
		return err
	}
	w.say("support revokes all of rita's sessions: %d revoked via the per-user index", n)
	w.say("rita's laptop: valid = %v; phone: valid = %v (revocation is immediate)", load("rita", rev.ID), load("rita", phone.ID))
	w.say("an unknown or malformed cookie looks the same: valid = %v", load("?", "garbage"))
	return nil
}

func flags(ctx context.Context, w *world) error {
	fs, err := featureflag.New(featureflag.Config{Backend: w.b})
	if err != nil {
		return err
	}
	defer fs.Close()
	w.say("rollout is in percent of customers (stored as basis points: 10%% = 1000 of 10,000 buckets)")
	ten, err := featureflag.Percent(10)
	if err != nil {
		return err
	}
	w.say("ana creates one-click-checkout at 10%%")
	f, err := fs.Create(ctx, "one-click-checkout", featureflag.State{Enabled: true, Rollout: ten}, "ana", "launch to 10%")
	if err != nil {
		return err
	}
	w.say("  created: revision %d", f.Revision)
	stop, _ := fs.Watch("one-click-checkout", func(f featureflag.Flag) {
		w.say("  watcher: revision %d now (rollout %g%%, killed %v)", f.Revision, f.RolloutPercent(), f.Killed)
	})
	defer stop()

	anaRead, _, _ := fs.Get(ctx, "one-click-checkout")
	boRead, _, _ := fs.Get(ctx, "one-click-checkout")
	w.clk.Advance(time.Minute)
	w.say("ana raises it to 50%% from revision %d", anaRead.Revision)
	if _, err := fs.Update(ctx, anaRead, featureflag.State{Enabled: true, Rollout: 5000}, "ana", "metrics green, 50%"); err != nil {
		return err
	}
	w.say("bo, still looking at revision %d, writes 20%%", boRead.Revision)
	_, err = fs.Update(ctx, boRead, featureflag.State{Enabled: true, Rollout: 2000}, "bo", "20% please")
	w.say("  refused: %v", err)

	users := 0
	for i := range 1000 {
		if fs.Enabled(ctx, "one-click-checkout", fmt.Sprint("customer-", i)) {
			users++
		}
	}
	w.say("%d of 1000 customers see it at 50%% (each customer's bucket is xxhash(flag, salt, customer) mod 10,000)", users)
	w.clk.Advance(time.Minute)
	w.say("on-call throws the kill switch")
	if _, err := fs.Kill(ctx, "one-click-checkout", "oncall", "checkout errors at 4%"); err != nil {
		return err
	}
	w.say("  on for customer-1 = %v", fs.Enabled(ctx, "one-click-checkout", "customer-1"))
	w.say("ana rolls back to revision 1")
	if _, err := fs.Rollback(ctx, "one-click-checkout", 1, "ana", ""); err != nil {
		return err
	}
	hist, err := fs.History(ctx, "one-click-checkout")
	if err != nil {
		return err
	}
	w.say("audit trail (written in the same atomic step as each change):")
	for _, h := range hist {
		w.say("  rev %d  %s  by %-6s %-28q rollout %3g%%  killed %v", h.Revision, h.Time.UTC().Format("15:04"), h.Actor, h.Reason, h.After.RolloutPercent(), h.After.Killed)
	}
	return nil
}

func tokenBucket(ctx context.Context, w *world) error {
	l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: w.b, Limit: 1, Period: time.Second, Burst: 5})
	if err != nil {
		return err
	}
	w.say("search API: bursts of 5, refilled at 1 request/second")
	steps := []struct {
		after time.Duration
		n     int
	}{{0, 7}, {2 * time.Second, 3}, {10 * time.Second, 6}}
	for _, s := range steps {
		w.clk.Advance(s.after)
		var line []string
		for range s.n {
			r, err := l.Allow(ctx, "api-key-77")
			if err != nil {
				return err
			}
			if r.Allowed {
				line = append(line, fmt.Sprintf("ok(%d left)", r.Remaining))
			} else {
				line = append(line, fmt.Sprintf("429(retry %v)", r.RetryAfter))
			}
		}
		w.say("%d requests: %s", s.n, strings.Join(line, " "))
	}
	return nil
}

func payments(ctx context.Context, w *world) error {
	s, err := idempotency.New(idempotency.Config{Backend: w.b, Retention: 24 * time.Hour, Lease: 30 * time.Second})
	if err != nil {
		return err
	}
	charges := 0
	pay := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		charges++
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusCreated)
		fmt.Fprintf(rw, `{"charge":"ch_%d","amount":%s}`, charges, body)
	})
	mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(r *http.Request) string { return r.Header.Get("X-Customer") }})
	if err != nil {
		return err
	}
	h := mw(pay)
	send := func(key, amount string) {
		req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(amount))
		req.Header.Set("X-Customer", "cust-9")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		extra := ""
		if rec.Header().Get(idempotency.ReplayedHeader) != "" {
			extra = " (replayed)"
		}
		w.say("POST /payments key=%q amount=%s → %d %s%s", key, amount, rec.Code, strings.TrimSpace(rec.Body.String()), extra)
	}
	send("order-1001", "4999")
	w.clk.Advance(3 * time.Second)
	w.say("the client timed out and retries the same request")
	send("order-1001", "4999")
	send("order-1001", "9999")
	send("", "4999")
	w.say("card charged %d time(s)", charges)
	return nil
}

func leases(ctx context.Context, w *world) error {
	ledger := lease.NewResource(40) // the ledger last accepted generation 40
	m, err := lease.New(lease.Config{Backend: w.b, TTL: 10 * time.Second,
		// After a restart the engine is empty; the ledger remembers.
		Floor: func(context.Context, string) (uint64, error) { return ledger.Highest() + 1, nil }})
	if err != nil {
		return err
	}
	a, _, _, err := m.Acquire(ctx, "nightly-settlement", "worker-a")
	if err != nil {
		return err
	}
	w.say("worker-a acquires the settlement lease: generation %d", a.Token)
	w.say("worker-a stalls (a 15s GC pause) past its 10s lease")
	w.clk.Advance(15 * time.Second)
	b, _, ok, err := m.Acquire(ctx, "nightly-settlement", "worker-b")
	if err != nil || !ok {
		return fmt.Errorf("worker-b could not acquire: %v", err)
	}
	w.say("worker-b acquires the expired lease: generation %d", b.Token)
	write := func(who string, gen uint64) {
		err := ledger.Do(gen, func() error { return nil })
		if err == nil {
			w.say("%s writes to the ledger with generation %d: accepted", who, gen)
		} else {
			w.say("%s writes to the ledger with generation %d: REJECTED (%v)", who, gen, err)
		}
	}
	write("worker-b", b.Token)
	w.say("worker-a wakes up, still believing it holds the lease")
	write("worker-a", a.Token)
	renewed, _ := m.Renew(ctx, a)
	w.say("worker-a tries to renew: %v — it stops", renewed)
	return nil
}

func smsBudget(ctx context.Context, w *world) error {
	const budget = 100
	cfg := func(b *embedded.Backend) ratelimit.Config {
		return ratelimit.Config{Name: "sms", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: budget, Period: time.Hour}
	}
	send := func(limiters []*ratelimit.Limiter, attempts int) (int, error) {
		sent := 0
		for i := range attempts {
			r, err := limiters[i%len(limiters)].Allow(ctx, "org-acme")
			if err != nil {
				return sent, err
			}
			if r.Allowed {
				sent++
			}
		}
		return sent, nil
	}
	w.say("org-acme may send %d SMS per hour; the app runs as 2 replicas behind a load balancer; it tries 300", budget)

	// Per-process: each replica has its own engine.
	r1, err := newWorld(w.clk)
	if err != nil {
		return err
	}
	defer r1.e.Close()
	r2, err := newWorld(w.clk)
	if err != nil {
		return err
	}
	defer r2.e.Close()
	l1, _ := ratelimit.New(cfg(r1.b))
	l2, _ := ratelimit.New(cfg(r2.b))
	sent, err := send([]*ratelimit.Limiter{l1, l2}, 300)
	if err != nil {
		return err
	}
	w.say("per-process limiters (each replica's own store): %d SMS sent — %d× the budget", sent, sent/budget)

	// Shared: both replicas use one backend (Redis in production).
	shared, err := newWorld(w.clk)
	if err != nil {
		return err
	}
	defer shared.e.Close()
	s1, _ := ratelimit.New(cfg(shared.b))
	s2, _ := ratelimit.New(cfg(shared.b))
	sent, err = send([]*ratelimit.Limiter{s1, s2}, 300)
	if err != nil {
		return err
	}
	w.say("one shared limiter (both replicas on one store): %d SMS sent — the budget holds", sent)
	w.clk.Advance(time.Hour)
	r, err := s1.Allow(ctx, "org-acme")
	if err != nil {
		return err
	}
	w.say("an hour later the window's key has expired with it: allowed = %v, %d left", r.Allowed, r.Remaining)
	return nil
}
