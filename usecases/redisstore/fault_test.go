package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store"
)

// faultBound is how long a call may take to report a dead or hung server:
// the client's dial/read timeout (500 ms) plus scheduling.
const faultBound = 2 * time.Second

// adapters are the use-case adapters under the fault test, all on one
// Redis backend.
type adapters struct {
	b          *redisstore.Backend
	openRL     *ratelimit.Limiter // OnStoreError: FailOpen
	closedRL   *ratelimit.Limiter // OnStoreError: FailClosed
	leases     *lease.Manager     // fence floored at the store's clock
	heldLease  *lease.Lease
	lastToken  uint64
	idem       *idempotency.Store
	executed   atomic.Int64 // side effects run through idem
	seq        int          // request keys issued
	sessions   *session.Manager
	sess       *session.Session // created by the last healthy phase
	usecaseCtx context.Context
}

func newAdapters(t *testing.T, srv *redisserver.Server) *adapters {
	t.Helper()
	b, err := redisstore.New(redisstore.Config{Client: srv.ClientTimeout(t, 500*time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	a := &adapters{b: b, usecaseCtx: context.Background()}
	rl := func(mode ratelimit.FailureMode) *ratelimit.Limiter {
		l, err := ratelimit.New(ratelimit.Config{Name: "fault", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 100, Period: time.Hour, OnStoreError: mode})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a.openRL, a.closedRL = rl(ratelimit.FailOpen), rl(ratelimit.FailClosed)
	a.leases, err = lease.New(lease.Config{Backend: b, TTL: time.Minute, Floor: lease.ClockFloor(b)})
	if err != nil {
		t.Fatal(err)
	}
	if a.idem, err = idempotency.New(idempotency.Config{Backend: b}); err != nil {
		t.Fatal(err)
	}
	if a.sessions, err = session.New(session.Config{Backend: b}); err != nil {
		t.Fatal(err)
	}
	return a
}

// pay is the side effect the idempotency store guards.
func (a *adapters) pay(context.Context) ([]byte, error) {
	a.executed.Add(1)
	return []byte("paid"), nil
}

func (a *adapters) nextKey() idempotency.Key {
	a.seq++
	return idempotency.Key{Scope: "tenant-1", Operation: "charge", Key: fmt.Sprint("req-", a.seq)}
}

// healthy checks every adapter works normally.
func (a *adapters) healthy(t *testing.T, phase string) {
	t.Helper()
	ctx := a.usecaseCtx
	for _, l := range []*ratelimit.Limiter{a.openRL, a.closedRL} {
		r, err := l.Allow(ctx, "sms:tenant-1")
		if err != nil || !r.Allowed || r.Degraded {
			t.Fatalf("%s: rate limit: got (%+v, %v), want allowed, not degraded, no error", phase, r, err)
		}
	}
	if a.heldLease != nil {
		a.leases.Release(ctx, a.heldLease)
	}
	l, info, ok, err := a.leases.Acquire(ctx, "billing-run", "worker-1")
	if err != nil || !ok {
		t.Fatalf("%s: lease acquire: got (%+v, %v, %v), want a lease", phase, info, ok, err)
	}
	if l.Token <= a.lastToken {
		t.Fatalf("%s: fencing token %d after %d: tokens must strictly increase, also across a server restart", phase, l.Token, a.lastToken)
	}
	a.heldLease, a.lastToken = l, l.Token
	if ok, err := a.leases.Renew(ctx, l); !ok || err != nil {
		t.Fatalf("%s: lease renew: got (%v, %v), want (true, nil)", phase, ok, err)
	}
	// Idempotency: one execution, then replays.
	k, before := a.nextKey(), a.executed.Load()
	for i := range 3 {
		res, replayed, err := a.idem.Do(ctx, k, []byte("100 EUR"), a.pay)
		if err != nil || string(res) != "paid" || replayed != (i > 0) {
			t.Fatalf("%s: idempotent call %d: got (%q, replayed %v, %v), want (\"paid\", %v, nil)", phase, i, res, replayed, err, i > 0)
		}
	}
	if n := a.executed.Load() - before; n != 1 {
		t.Fatalf("%s: side effect ran %d times for one key, want once", phase, n)
	}
	// Sessions.
	s, err := a.sessions.Create(ctx, "alice", "tenant-1", nil)
	if err != nil {
		t.Fatalf("%s: session create: %v", phase, err)
	}
	if got, ok, err := a.sessions.Load(ctx, s.ID); !ok || err != nil || got.UserID != "alice" {
		t.Fatalf("%s: session load: got (%v, %v), want alice's session", phase, ok, err)
	}
	a.sess = s
}

// failing checks every adapter applies its documented failure policy, and
// does so within faultBound.
func (a *adapters) failing(t *testing.T, phase string) {
	t.Helper()
	ctx := a.usecaseCtx
	timed := func(what string, fn func()) {
		t.Helper()
		start := time.Now()
		fn()
		if d := time.Since(start); d > faultBound {
			t.Errorf("%s: %s took %v to report the failure, want ≤ %v", phase, what, d, faultBound)
		}
	}
	// The backend: every failure is ErrUnavailable.
	timed("backend Get", func() {
		if _, _, err := a.b.Get(ctx, "k"); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: backend Get: got %v, want ErrUnavailable", phase, err)
		}
	})
	timed("backend Decide", func() {
		if err := a.b.TokenBucket(ctx, &store.TokenBucket{Key: "k", Capacity: 1, Interval: time.Second, Cost: 1}); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: backend Decide: got %v, want ErrUnavailable", phase, err)
		}
	})
	// Rate limits: the caller's explicit choice.
	timed("fail-open limiter", func() {
		r, err := a.openRL.Allow(ctx, "sms:tenant-1")
		if !r.Allowed || !r.Degraded || !errors.Is(err, ratelimit.ErrStore) || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: fail-open limiter: got (%+v, %v), want allowed, degraded, ErrStore wrapping ErrUnavailable", phase, r, err)
		}
	})
	timed("fail-closed limiter", func() {
		r, err := a.closedRL.Allow(ctx, "sms:tenant-1")
		if r.Allowed || !r.Degraded || !errors.Is(err, ratelimit.ErrStore) {
			t.Errorf("%s: fail-closed limiter: got (%+v, %v), want denied, degraded, ErrStore", phase, r, err)
		}
	})
	// Leases fail closed: no lease is granted, a renewal is not confirmed.
	timed("lease acquire", func() {
		l, _, ok, err := a.leases.Acquire(ctx, "other-job", "worker-2")
		if l != nil || ok || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: lease acquire: got (%v, %v, %v), want no lease and ErrUnavailable", phase, l, ok, err)
		}
	})
	timed("lease renew", func() {
		ok, err := a.leases.Renew(ctx, a.heldLease)
		if ok || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: lease renew: got (%v, %v), want (false, ErrUnavailable): the holder must assume the lease lapses", phase, ok, err)
		}
	})
	// Idempotency fails closed: without a claim the side effect does not
	// run (running it could run it twice).
	timed("idempotent call", func() {
		before := a.executed.Load()
		_, _, err := a.idem.Do(ctx, a.nextKey(), []byte("100 EUR"), a.pay)
		if !errors.Is(err, store.ErrUnavailable) || a.executed.Load() != before {
			t.Errorf("%s: idempotent call: got %v and %d executions, want ErrUnavailable and none", phase, err, a.executed.Load()-before)
		}
	})
	// Sessions: an unavailable error, never a session (nor "no session"
	// without an error).
	timed("session load", func() {
		s, ok, err := a.sessions.Load(ctx, a.sess.ID)
		if ok || s != nil || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: session load: got (%v, %v, %v), want (nil, false, ErrUnavailable)", phase, s, ok, err)
		}
	})
	timed("session create", func() {
		if s, err := a.sessions.Create(ctx, "bob", "tenant-1", nil); s != nil || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: session create: got (%v, %v), want (nil, ErrUnavailable)", phase, s, err)
		}
	})
}

// TestFault stops the server in the middle of a test, twice (a crash:
// SIGKILL, then a restart on the same port with an empty keyspace; and a
// hang: SIGSTOP, then SIGCONT), and checks that each adapter does what its
// contract says while the server is gone, within the client's timeout,
// and recovers when it returns: rate limits fail open or closed as
// configured; leases, idempotency and sessions fail closed with an error
// wrapping store.ErrUnavailable.
func TestFault(t *testing.T) {
	redis.SetLogger(quiet{}) // go-redis logs every failed dial; the failures are the point here
	srv := redisserver.Start(t)
	a := newAdapters(t, srv)
	a.healthy(t, "before")

	srv.Kill()
	a.failing(t, "server killed")
	lost := a.sess
	srv.Restart() // empty: no persistence
	// A restart without persistence forgets sessions (a forced logout,
	// reported as "no session", not as an error); fencing tokens still
	// rise (checked by healthy, thanks to lease.ClockFloor).
	if s, ok, err := a.sessions.Load(context.Background(), lost.ID); ok || err != nil {
		t.Fatalf("session after an empty restart: got (%v, %v, %v), want (nil, false, nil)", s, ok, err)
	}
	a.healthy(t, "after restart")

	srv.Pause()
	a.failing(t, "server hung")
	srv.Resume()
	// A hang loses nothing: the session of before is still there.
	if _, ok, err := a.sessions.Load(context.Background(), a.sess.ID); !ok || err != nil {
		t.Fatalf("session after the server resumed: got (%v, %v), want it back", ok, err)
	}
	a.healthy(t, "after resume")
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
