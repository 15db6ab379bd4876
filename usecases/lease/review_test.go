package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// cancelling is a backend whose lease decision fails because the caller's
// context ends during the round trip, as a remote client's does.
type cancelling struct {
	lease.Backend
	cancel context.CancelFunc
}

func (c *cancelling) Lease(ctx context.Context, d *store.Lease) error {
	c.cancel()
	return ctx.Err()
}

// A caller that goes away (its context ends before or during the store
// call) gets its context's error, and that is not a store failure: it is
// neither logged nor passed to OnError. Also for the Floor.
func TestCancelledIsNotAStoreFailure(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	setup, _ := lease.New(lease.Config{Backend: b})
	held, _, _, err := setup.Acquire(context.Background(), "job", "A")
	if err != nil {
		t.Fatal(err)
	}
	ops := []struct {
		name string
		run  func(ctx context.Context, m *lease.Manager) error
	}{
		{"Acquire", func(ctx context.Context, m *lease.Manager) error {
			_, _, _, err := m.Acquire(ctx, "other", "B")
			return err
		}},
		{"Renew", func(ctx context.Context, m *lease.Manager) error { _, err := m.Renew(ctx, held); return err }},
		{"Release", func(ctx context.Context, m *lease.Manager) error { _, err := m.Release(ctx, held); return err }},
		{"Inspect", func(ctx context.Context, m *lease.Manager) error { _, _, err := m.Inspect(ctx, "job"); return err }},
	}
	for _, when := range []string{"before the call", "during the call"} {
		for _, withFloor := range []bool{false, true} {
			for _, op := range ops {
				ctx, cancel := context.WithCancel(context.Background())
				var be lease.Backend = b
				if when == "before the call" {
					cancel()
				} else {
					be = &cancelling{Backend: b, cancel: cancel}
				}
				logs, logger := storetest.NewLogs()
				hooked := 0
				cfg := lease.Config{Backend: be, Logger: logger, OnError: func(context.Context, string, error) { hooked++ }}
				if withFloor {
					cfg.Floor = lease.ClockFloor(b)
				}
				m, err := lease.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				err = op.run(ctx, m)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s, cancelled %s (floor %v): got %v, want context.Canceled", op.name, when, withFloor, err)
				}
				if n := len(logs.Records()); n != 0 || hooked != 0 {
					t.Errorf("%s, cancelled %s (floor %v): %d records, %d hook calls (%v); want none", op.name, when, withFloor, n, hooked, logs.Records())
				}
				cancel()
			}
		}
	}
	if info, ok, _ := setup.Inspect(context.Background(), "job"); !ok || info.Token != held.Token {
		t.Fatalf("the held lease after cancelled calls: got (%+v, %v), want still held with token %d", info, ok, held.Token)
	}
}

// The usual way to hold a lease: one goroutine renews it while the worker
// asks how long it may still rely on it. Manager is safe for concurrent
// use; so must be that pattern (run with -race).
func TestRenewConcurrentWithSafeRemaining(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, _ := lease.New(lease.Config{Backend: b, TTL: time.Minute, LocalClock: clock.NewManual(time.Unix(0, 0))})
	ctx := context.Background()
	l, _, ok, err := m.Acquire(ctx, "job", "A")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range 100 {
			if ok, err := m.Renew(ctx, l); !ok || err != nil {
				t.Errorf("Renew: got (%v, %v), want (true, nil)", ok, err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 100 {
			if r := m.SafeRemaining(l); r <= 0 {
				t.Errorf("SafeRemaining = %v, want > 0", r)
				return
			}
			_, cancel := m.SafeContext(ctx, l)
			cancel()
		}
	}()
	wg.Wait()
}

// New refuses a Prefix with a brace: the lease's name must stay the hash
// tag of its record and fence counter (with "{}" in the prefix the two
// land in different Redis Cluster slots and every call fails there; see
// redisstore's TestLeasePrefixWithBracesOnCluster).
func TestNewRefusesPrefixWithBrace(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for _, c := range []struct {
		prefix string
		ok     bool
	}{
		{"{}", false},
		{"app:{}:lease:", false},
		{"{tenant}:", false},
		{"app:lease:", true},
		{"app}:", true},
	} {
		_, err := lease.New(lease.Config{Backend: b, Prefix: c.prefix})
		if c.ok && err != nil || !c.ok && !errors.Is(err, lease.ErrInvalidConfig) {
			t.Errorf("Prefix %q: got %v, want accepted %v (else ErrInvalidConfig)", c.prefix, err, c.ok)
		}
	}
}

// The local clock may go backwards (clock.Clock allows a faulty source):
// SafeRemaining must never then exceed the full safe budget
// TTL·(1−Drift) − Margin, or SafeContext would outlive the lease.
func TestSafeRemainingWithLocalClockGoingBack(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	local := clock.NewManual(time.Unix(1000, 0))
	m, _ := lease.New(lease.Config{Backend: b, TTL: 10 * time.Second, Drift: 0.01, Margin: 5 * time.Millisecond, LocalClock: local})
	l, _, _, _ := m.Acquire(context.Background(), "x", "A")
	budget := 9900*time.Millisecond - 5*time.Millisecond
	for _, step := range []time.Duration{-time.Hour, 2 * time.Second, -time.Second} {
		local.Advance(step)
		if got := m.SafeRemaining(l); got > budget {
			t.Errorf("after the local clock moved %v: SafeRemaining = %v, want ≤ %v", step, got, budget)
		}
	}
}

// TestInspectRefusesEmptyName: an empty name is ErrInvalidName for every
// call that takes one; Inspect answered "free" for it.
func TestInspectRefusesEmptyName(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, err := lease.New(lease.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := m.Inspect(context.Background(), ""); ok || !errors.Is(err, lease.ErrInvalidName) {
		t.Errorf("Inspect(\"\"): got (ok %v, %v), want ErrInvalidName", ok, err)
	}
	if _, _, ok, err := m.Acquire(context.Background(), "", "A"); ok || !errors.Is(err, lease.ErrInvalidName) {
		t.Errorf("Acquire(\"\", \"A\"): got (ok %v, %v), want ErrInvalidName", ok, err)
	}
}
