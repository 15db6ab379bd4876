package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Embedded)
}

// TestUseCasesRealTime runs the adapters' suites as a Redis backend would
// (real clock, sleeping Advance), to keep them portable.
func TestUseCasesRealTime(t *testing.T) {
	if os.Getenv("TIDE_REALTIME") == "" {
		t.Skip("sleeps for tens of seconds; set TIDE_REALTIME=1 to run")
	}
	storetest.RunUseCases(t, realTime)
}

// TestConformanceFrozenClock runs the suite as a backend whose clock cannot
// be moved would: the time-dependent cases are skipped.
func TestConformanceFrozenClock(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Fixture {
		f := storetest.Embedded(t)
		f.Advance = nil
		return f
	})
}

// TestConformanceRealTime runs the suite as a Redis backend would: on the
// real clock, advancing time by sleeping, with a small unit and a slack.
func TestConformanceRealTime(t *testing.T) {
	if os.Getenv("TIDE_REALTIME") == "" {
		t.Skip("sleeps for tens of seconds; set TIDE_REALTIME=1 to run")
	}
	storetest.Run(t, realTime)
}

func realTime(t *testing.T) storetest.Fixture {
	e, err := engine.New(engine.Config{Shards: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	b, err := embedded.New(embedded.Config{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	return storetest.Fixture{Backend: b, Advance: storetest.SleepAdvance, Unit: 100 * time.Millisecond, Slack: 25 * time.Millisecond}
}

func TestGetAfterCloseIsErrClosed(t *testing.T) {
	e, err := engine.New(engine.Config{ExpiryInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := embedded.New(embedded.Config{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, ok, err := b.Get(ctx, "missing"); ok || err != nil {
		t.Fatalf("Get on open engine: got %v,%v want miss,nil", ok, err)
	}
	e.Close()
	if _, _, err := b.Get(ctx, "missing"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Get after Close: got %v want ErrClosed", err)
	}
}

// TestClosedIsErrClosed checks that every call on a backend whose engine is
// closed reports store.ErrClosed, never an answer: a decision that writes
// nothing (an inspect, a peek, a refused condition) must not read the
// closed engine's misses as "no lease", "no record", "allowed".
func TestClosedIsErrClosed(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	ctx := context.Background()
	// State the calls below would report if the engine still answered.
	if _, _, err := b.Set(ctx, "k", []byte("v"), store.SetOptions{TTL: store.NoTTL}); err != nil {
		t.Fatal(err)
	}
	ld := &store.Lease{Op: store.LeaseAcquire, Key: "lease:{l}", FenceKey: "lease:{l}:fence", Holder: "A", TTL: time.Minute}
	if err := b.Lease(ctx, ld); err != nil || !ld.OK {
		t.Fatalf("acquire: got (%v, %v), want ok", ld.OK, err)
	}
	b.Engine().Close()
	lease := func(op store.LeaseOp) error {
		return b.Lease(ctx, &store.Lease{Op: op, Key: "lease:{l}", FenceKey: "lease:{l}:fence", Holder: "A", Token: ld.Current.Token, TTL: time.Minute})
	}
	idem := func(op store.IdemOp) error {
		return b.Idempotency(ctx, &store.Idempotency{Op: op, Key: "{i}", Owner: "A", Lease: time.Minute, Retention: time.Hour})
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"Now", second(b.Now(ctx))},
		{"Get", third(b.Get(ctx, "k"))},
		{"Set", third(b.Set(ctx, "k", nil, store.SetOptions{TTL: store.NoTTL}))},
		{"Delete", second(b.Delete(ctx, "k"))},
		{"CompareAndDelete", second(b.CompareAndDelete(ctx, "k", 1))},
		{"TokenBucket peek", b.TokenBucket(ctx, &store.TokenBucket{Key: "{tb}", Capacity: 1, Interval: time.Second})},
		{"TokenBucket", b.TokenBucket(ctx, &store.TokenBucket{Key: "{tb}", Capacity: 1, Interval: time.Second, Cost: 1})},
		{"FixedWindow peek", b.FixedWindow(ctx, &store.FixedWindow{Key: "{fw}", Limit: 1, Window: time.Second})},
		{"FixedWindow", b.FixedWindow(ctx, &store.FixedWindow{Key: "{fw}", Limit: 1, Window: time.Second, Cost: 1})},
		{"SlidingWindow peek", b.SlidingWindow(ctx, &store.SlidingWindow{Key: "{sw}", Limit: 1, Window: time.Second})},
		{"SlidingWindow", b.SlidingWindow(ctx, &store.SlidingWindow{Key: "{sw}", Limit: 1, Window: time.Second, Cost: 1})},
		{"Idempotency claim", idem(store.IdemClaim)},
		{"Idempotency complete", idem(store.IdemComplete)},
		{"Idempotency release", idem(store.IdemRelease)},
		{"Idempotency inspect", idem(store.IdemInspect)},
		{"Lease acquire", lease(store.LeaseAcquire)},
		{"Lease renew", lease(store.LeaseRenew)},
		{"Lease release", lease(store.LeaseRelease)},
		{"Lease inspect", lease(store.LeaseInspect)},
		{"FlagWrite create", b.FlagWrite(ctx, &store.FlagWrite{Key: "{f}", AuditKey: "{f}:audit"})},
		{"FlagWrite update", b.FlagWrite(ctx, &store.FlagWrite{Key: "{f}", IfVersion: 7, AuditKey: "{f}:audit"})},
	} {
		if !errors.Is(c.err, store.ErrClosed) {
			t.Errorf("%s on a closed engine: got %v, want ErrClosed", c.name, c.err)
		}
	}
}

func second[A any](_ A, err error) error        { return err }
func third[A, B any](_ A, _ B, err error) error { return err }

// TestCraftedIdempotencyDeadlineIsCorrupt: an idempotency record whose lease
// deadline is negative (written by Set, never by a claim) is ErrCorrupt,
// with the key left as it was; read as a lapsed lease, it would let a
// claim take the record over as a recovery.
func TestCraftedIdempotencyDeadlineIsCorrupt(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	ctx := context.Background()
	rec := append([]byte{1}, 0x80, 0, 0, 0, 0, 0, 0, 0) // in progress, deadline −2^63
	rec = append(rec, 0, 0, 0, 0, 0, 0, 0, 1, 'A', 0, 0, 0, 0)
	if _, _, err := b.Set(ctx, "{i}", rec, store.SetOptions{TTL: store.NoTTL}); err != nil {
		t.Fatal(err)
	}
	d := &store.Idempotency{Op: store.IdemClaim, Key: "{i}", Owner: "B", Lease: time.Minute, Retention: time.Hour}
	if err := b.Idempotency(ctx, d); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("claim over a record with a negative deadline: got (%v, %v), want ErrCorrupt", d.Outcome, err)
	}
	if it, ok, err := b.Get(ctx, "{i}"); !ok || err != nil || !bytes.Equal(it.Value, rec) {
		t.Errorf("record after the refused claim: got (%x, %v, %v), want it unchanged", it.Value, ok, err)
	}
}
