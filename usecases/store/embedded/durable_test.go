package embedded_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// openDurable opens an engine logging to dir (every write fsynced) and an
// embedded backend on it: a process's store, restartable on the same dir.
func openDurable(t *testing.T, dir string) (*engine.Engine, *embedded.Backend) {
	t.Helper()
	e, err := engine.New(engine.Config{Durability: engine.Durability{Dir: dir, Sync: engine.SyncAlways}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := embedded.New(embedded.Config{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	return e, b
}

func TestDurableIdempotencyRecordReplaysAfterRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	k := idempotency.Key{Scope: "acct-1", Operation: "charge", Key: "order-42"}
	fp := idempotency.Fingerprint([]byte("amount=100"))
	charges := 0
	charge := func(context.Context) ([]byte, error) {
		charges++
		return []byte("receipt-1"), nil
	}

	e, b := openDurable(t, dir)
	s, err := idempotency.New(idempotency.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	if res, replayed, err := s.Do(ctx, k, fp, charge); err != nil || replayed || string(res) != "receipt-1" {
		t.Fatalf("first Do = %q, %v, %v", res, replayed, err)
	}
	if err := e.Close(); err != nil { // the process restarts
		t.Fatal(err)
	}

	e2, b2 := openDurable(t, dir)
	defer e2.Close()
	s2, _ := idempotency.New(idempotency.Config{Backend: b2})
	res, replayed, err := s2.Do(ctx, k, fp, charge)
	if err != nil || !replayed || string(res) != "receipt-1" || charges != 1 {
		t.Fatalf("retry after restart = %q, replayed %v, %v; charged %d times, want once", res, replayed, err, charges)
	}
}

func TestDurableLeaseFencingTokensStayMonotonicAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var last uint64
	for restart := range 3 {
		e, b := openDurable(t, dir)
		m, err := lease.New(lease.Config{Backend: b}) // no Floor
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			l, _, ok, err := m.Acquire(ctx, "job", "worker")
			if err != nil || !ok {
				t.Fatalf("Acquire: %v %v", ok, err)
			}
			if l.Token <= last {
				t.Fatalf("after %d restarts: token %d, not above %d issued before", restart, l.Token, last)
			}
			last = l.Token
			if _, err := m.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDurableIdempotencyClaimInProgressAtCrash guards the idempotency
// contract across a crash in the middle of a request: the claim survives
// the restart, so a retry is refused as in progress (never run a second
// time while the first may still be running) until the claim's lease
// lapses, and is then recovered (run once more, reported as such).
func TestDurableIdempotencyClaimInProgressAtCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	open := func() (*engine.Engine, *idempotency.Store) {
		e, err := engine.New(engine.Config{Clock: clk, ExpiryInterval: -1, Durability: engine.Durability{Dir: dir, Sync: engine.SyncAlways}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := embedded.New(embedded.Config{Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		s, err := idempotency.New(idempotency.Config{Backend: b, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return e, s
	}
	k := idempotency.Key{Scope: "acct-1", Operation: "charge", Key: "order-7"}
	fp := idempotency.Fingerprint([]byte("amount=100"))
	e, s := open()
	if c, err := s.Claim(ctx, k, fp); err != nil || c.State != idempotency.Execute {
		t.Fatalf("first Claim = %+v, %v", c, err)
	}
	// The process dies while the charge runs: nothing completes the claim.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2, s2 := open()
	defer e2.Close()
	ran := 0
	charge := func(context.Context) ([]byte, error) { ran++; return []byte("receipt"), nil }
	if _, _, err := s2.Do(ctx, k, fp, charge); !errors.Is(err, idempotency.ErrInProgress) || ran != 0 {
		t.Fatalf("retry after restart: %v, ran %d times; want ErrInProgress and not run", err, ran)
	}
	clk.Advance(time.Minute + time.Second)
	if c, err := s2.Claim(ctx, k, fp); err != nil || c.State != idempotency.Recover {
		t.Fatalf("Claim after the lease lapsed = %+v, %v; want Recover", c, err)
	}
}
