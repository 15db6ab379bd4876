package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// Run runs the backend conformance suite: every primitive and every
// decision, their edge cases, and the decisions' invariants under
// concurrency. Each subtest calls newFixture for a fresh backend.
func Run(t *testing.T, newFixture NewFunc) {
	newFixture = instrument(newFixture)
	t.Run("Primitives", func(t *testing.T) { runPrimitives(t, newFixture) })
	t.Run("TTLRule", func(t *testing.T) { runTTLRule(t, newFixture) })
	t.Run("TokenBucket", func(t *testing.T) { runTokenBucket(t, newFixture) })
	t.Run("FixedWindow", func(t *testing.T) { runFixedWindow(t, newFixture) })
	t.Run("SlidingWindow", func(t *testing.T) { runSlidingWindow(t, newFixture) })
	t.Run("Idempotency", func(t *testing.T) { runIdempotency(t, newFixture) })
	t.Run("Lease", func(t *testing.T) { runLease(t, newFixture) })
	t.Run("FlagWrite", func(t *testing.T) { runFlagWrite(t, newFixture) })
	t.Run("Kinds", func(t *testing.T) { runKinds(t, newFixture) })
	t.Run("Concurrency", func(t *testing.T) { runConcurrency(t, newFixture) })
	t.Run("Scopes", func(t *testing.T) { runScopes(t, newFixture) })
	t.Run("Tags", func(t *testing.T) { runTags(t, newFixture) })
}

func mustSet(t *testing.T, b store.Backend, key, value string, o store.SetOptions) uint64 {
	t.Helper()
	v, ok, err := b.Set(context.Background(), key, []byte(value), o)
	if err != nil || !ok {
		t.Fatalf("Set(%q): got (%v, %v), want (true, nil)", key, ok, err)
	}
	return v
}

func mustNow(t *testing.T, b store.Backend) time.Time {
	t.Helper()
	now, err := b.Now(context.Background())
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	return now
}

// decide runs d with a backend's method for its kind and fails t on error.
func decide[D any](t *testing.T, run func(context.Context, D) error, d D) {
	t.Helper()
	if err := run(context.Background(), d); err != nil {
		t.Fatalf("%T: %v", d, err)
	}
}

func runPrimitives(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	t.Run("GetSetDelete", func(t *testing.T) {
		f := newFixture(t)
		b := f.Backend
		if _, ok, err := b.Get(ctx, "k"); ok || err != nil {
			t.Fatal("Get on an empty store: got a hit, want a miss")
		}
		val := []byte("v1")
		v1, ok, err := b.Set(ctx, "k", val, store.SetOptions{TTL: store.NoTTL})
		if err != nil || !ok || v1 == 0 {
			t.Fatalf("Set: got (%d, %v, %v), want (non-zero, true, nil)", v1, ok, err)
		}
		val[0] = 'X' // the store must have copied it
		it, ok, err := b.Get(ctx, "k")
		if err != nil || !ok || string(it.Value) != "v1" || it.Version != v1 || it.TTL != store.NoTTL {
			t.Fatalf("Get: got (%q, v%d, ttl %v, %v, %v), want (\"v1\", v%d, NoTTL, true, nil)", it.Value, it.Version, it.TTL, ok, err, v1)
		}
		it.Value[0] = 'Y'
		if it2, _, _ := b.Get(ctx, "k"); string(it2.Value) != "v1" {
			t.Fatalf("Get returned memory the store kept: got %q after mutation, want \"v1\"", it2.Value)
		}
		v2, _, _ := b.Set(ctx, "k", []byte("v2"), store.SetOptions{TTL: store.NoTTL})
		if v2 == v1 {
			t.Fatalf("overwrite kept version %d, want a new one", v1)
		}
		if d, err := b.Delete(ctx, "k"); !d || err != nil {
			t.Fatalf("Delete existing: got (%v, %v), want (true, nil)", d, err)
		}
		if d, err := b.Delete(ctx, "k"); d || err != nil {
			t.Fatalf("Delete missing: got (%v, %v), want (false, nil)", d, err)
		}
		v3, _, _ := b.Set(ctx, "k", []byte("v1"), store.SetOptions{TTL: store.NoTTL})
		if v3 == v1 || v3 == v2 {
			t.Fatalf("re-created key reused a version: got %d, earlier %d and %d", v3, v1, v2)
		}
	})
	t.Run("Conditions", func(t *testing.T) {
		f := newFixture(t)
		b := f.Backend
		u := f.unit()
		cases := []struct {
			name    string
			o       store.SetOptions
			present bool
			wantOK  bool
		}{
			{"IfAbsent/absent", store.SetOptions{IfAbsent: true, TTL: store.NoTTL}, false, true},
			{"IfAbsent/present", store.SetOptions{IfAbsent: true, TTL: store.NoTTL}, true, false},
			{"IfAbsent+TTL/absent", store.SetOptions{IfAbsent: true, TTL: 5 * u}, false, true},
		}
		for i, c := range cases {
			key := fmt.Sprintf("cond%d", i)
			var before uint64
			if c.present {
				before = mustSet(t, b, key, "old", store.SetOptions{TTL: store.NoTTL})
			}
			v, ok, err := b.Set(ctx, key, []byte("new"), c.o)
			if err != nil || ok != c.wantOK {
				t.Errorf("%s: got (ok %v, err %v), want ok %v", c.name, ok, err, c.wantOK)
				continue
			}
			it, _, _ := b.Get(ctx, key)
			switch {
			case ok && (string(it.Value) != "new" || it.Version != v):
				t.Errorf("%s: after a successful write got (%q, v%d), want (\"new\", v%d)", c.name, it.Value, it.Version, v)
			case !ok && c.present && (string(it.Value) != "old" || it.Version != before):
				t.Errorf("%s: a failed write changed the key: got (%q, v%d), want (\"old\", v%d)", c.name, it.Value, it.Version, before)
			}
			if c.o.TTL > 0 && ok {
				f.checkDur(t, c.name+" TTL", it.TTL, c.o.TTL)
			}
		}
	})
	t.Run("CompareAndSwap", func(t *testing.T) {
		f := newFixture(t)
		b := f.Backend
		u := f.unit()
		v1 := mustSet(t, b, "k", "a", store.SetOptions{TTL: 10 * u})
		if _, ok, err := b.Set(ctx, "k", []byte("x"), store.SetOptions{IfVersion: v1 + 1000, TTL: 10 * u}); ok || err != nil {
			t.Fatalf("CAS with a wrong version: got (%v, %v), want (false, nil)", ok, err)
		}
		v2, ok, err := b.Set(ctx, "k", []byte("b"), store.SetOptions{IfVersion: v1, TTL: store.NoTTL})
		if !ok || err != nil || v2 == v1 {
			t.Fatalf("CAS with the current version: got (v%d, %v, %v), want (new version, true, nil)", v2, ok, err)
		}
		it, _, _ := b.Get(ctx, "k")
		if it.TTL != store.NoTTL {
			t.Errorf("CAS with NoTTL: got TTL %v, want none (a write sets the TTL)", it.TTL)
		}
		if _, ok, _ := b.Set(ctx, "k", []byte("c"), store.SetOptions{IfVersion: v1, TTL: store.NoTTL}); ok {
			t.Fatal("CAS with a stale version succeeded")
		}
		if _, ok, _ := b.Set(ctx, "missing", []byte("c"), store.SetOptions{IfVersion: v1, TTL: store.NoTTL}); ok {
			t.Fatal("CAS on a missing key succeeded")
		}
		v3, ok, _ := b.Set(ctx, "k", []byte("d"), store.SetOptions{IfVersion: v2, TTL: 3 * u})
		if !ok {
			t.Fatal("CAS with a new TTL failed")
		}
		it, _, _ = b.Get(ctx, "k")
		f.checkDur(t, "TTL replaced by CAS", it.TTL, 3*u)
		if d, err := b.CompareAndDelete(ctx, "k", v2); d || err != nil {
			t.Fatalf("CompareAndDelete with a stale version: got (%v, %v), want (false, nil)", d, err)
		}
		if d, _ := b.CompareAndDelete(ctx, "k", 0); d {
			t.Fatal("CompareAndDelete with version 0 deleted")
		}
		if d, err := b.CompareAndDelete(ctx, "k", v3); !d || err != nil {
			t.Fatalf("CompareAndDelete with the current version: got (%v, %v), want (true, nil)", d, err)
		}
	})
	t.Run("Expiry", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		b := f.Backend
		u := f.unit()
		t0 := mustNow(t, b)
		v1 := mustSet(t, b, "k", "a", store.SetOptions{TTL: 2 * u})
		f.Advance(u)
		if t1 := mustNow(t, b); t1.Sub(t0) < u-f.Slack {
			t.Fatalf("Now moved %v after Advance(%v)", t1.Sub(t0), u)
		}
		it, ok, _ := b.Get(ctx, "k")
		if !ok {
			t.Fatal("key gone before its TTL")
		}
		f.checkDur(t, "TTL after one unit", it.TTL, u)
		f.Advance(u + f.Slack)
		if _, ok, _ := b.Get(ctx, "k"); ok {
			t.Fatal("key visible at its deadline")
		}
		if _, ok, _ := b.Set(ctx, "k", []byte("b"), store.SetOptions{IfVersion: v1, TTL: store.NoTTL}); ok {
			t.Fatal("CAS on an expired key succeeded")
		}
		if _, ok, _ := b.Set(ctx, "k", []byte("b"), store.SetOptions{IfAbsent: true, TTL: store.NoTTL}); !ok {
			t.Fatal("set-if-absent on an expired key failed")
		}
	})
	t.Run("OverlongKey", func(t *testing.T) {
		// A key longer than the backend accepts cannot exist: a write of
		// it is ErrKeyTooLarge with nothing written, and a primitive that
		// only reads or deletes reports a miss, as for any absent key
		// (both backends' default limit is 64 KiB).
		f := newFixture(t)
		b := f.Backend
		long := strings.Repeat("k", 64<<10+1)
		_, ok, err := b.Set(ctx, long, []byte("v"), store.SetOptions{TTL: store.NoTTL})
		if err == nil {
			t.Skipf("the backend accepts keys of %d bytes", len(long))
		}
		if ok || !errors.Is(err, store.ErrKeyTooLarge) {
			t.Fatalf("Set of a %d-byte key: got (ok %v, %v), want ErrKeyTooLarge", len(long), ok, err)
		}
		if _, found, err := b.Get(ctx, long); found || err != nil {
			t.Errorf("Get of an over-long key: got (%v, %v), want (false, nil)", found, err)
		}
		if d, err := b.Delete(ctx, long); d || err != nil {
			t.Errorf("Delete of an over-long key: got (%v, %v), want (false, nil)", d, err)
		}
		if d, err := b.CompareAndDelete(ctx, long, 1); d || err != nil {
			t.Errorf("CompareAndDelete of an over-long key: got (%v, %v), want (false, nil)", d, err)
		}
	})
	t.Run("OverlongKeyDecisions", func(t *testing.T) {
		// Every decision, those that would write nothing included (an
		// inspect, a peek, a refused condition), refuses a key longer
		// than the backend accepts with ErrKeyTooLarge: it must not
		// answer "absent", "free" or "allowed" for a key that cannot
		// exist (both backends' default limit is 64 KiB).
		f := newFixture(t)
		b := f.Backend
		long := "{k}" + strings.Repeat("k", 64<<10-2)
		if _, _, err := b.Set(ctx, long, []byte("v"), store.SetOptions{TTL: store.NoTTL}); err == nil {
			t.Skipf("the backend accepts keys of %d bytes", len(long))
		}
		for _, c := range []struct {
			name string
			err  error
		}{
			{"TokenBucket peek", b.TokenBucket(ctx, &store.TokenBucket{Key: long, Capacity: 1, Interval: time.Second})},
			{"FixedWindow peek", b.FixedWindow(ctx, &store.FixedWindow{Key: long, Limit: 1, Window: time.Second})},
			{"SlidingWindow peek", b.SlidingWindow(ctx, &store.SlidingWindow{Key: long, Limit: 1, Window: time.Second})},
			{"Idempotency inspect", b.Idempotency(ctx, &store.Idempotency{Op: store.IdemInspect, Key: long, Owner: "A", Lease: time.Minute, Retention: time.Hour})},
			{"Idempotency release", b.Idempotency(ctx, &store.Idempotency{Op: store.IdemRelease, Key: long, Owner: "A", Lease: time.Minute, Retention: time.Hour})},
			{"Lease inspect", b.Lease(ctx, &store.Lease{Op: store.LeaseInspect, Key: long, FenceKey: "{k}:fence", Holder: "A", TTL: time.Minute})},
			{"Lease release", b.Lease(ctx, &store.Lease{Op: store.LeaseRelease, Key: long, FenceKey: "{k}:fence", Holder: "A", Token: 1, TTL: time.Minute})},
			{"Lease fence", b.Lease(ctx, &store.Lease{Op: store.LeaseInspect, Key: "{k}", FenceKey: long, Holder: "A", TTL: time.Minute})},
			{"FlagWrite refused", b.FlagWrite(ctx, &store.FlagWrite{Key: long, IfVersion: 7, AuditKey: "{k}:audit"})},
			{"FlagWrite audit", b.FlagWrite(ctx, &store.FlagWrite{Key: "{k}", AuditKey: long})},
		} {
			if !errors.Is(c.err, store.ErrKeyTooLarge) {
				t.Errorf("%s with a %d-byte key: got %v, want ErrKeyTooLarge", c.name, len(long), c.err)
			}
		}
	})
	t.Run("ReservedKeys", func(t *testing.T) {
		// Keys beginning with store.ReservedPrefix are no caller's (a
		// backend's own bookkeeping, such as redisstore's version
		// counters): Set and every decision refuse them with
		// ErrInvalidArgument, writing nothing, and Get, Delete and
		// CompareAndDelete report a miss, on every backend. So are keys
		// that put ReservedPrefix right after a scope's prefix ("s:"
		// + ReservedPrefix): on a backend without a scope they are scope
		// "s:"'s own keys, which a Set there would replace (on Redis, a
		// version counter replaced by a hash fails every later write in
		// its slot of scope "s:").
		f := newFixture(t)
		b := f.Backend
		for _, k := range []string{store.ReservedPrefix + "{0}", store.ReservedPrefix + "x{0}", "s:" + store.ReservedPrefix + "{0}", "a}\x00:" + store.ReservedPrefix + "x{0}"} {
			if _, ok, err := b.Set(ctx, k, []byte("v"), store.SetOptions{TTL: store.NoTTL}); ok || !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("Set(%q): got (ok %v, %v), want ErrInvalidArgument", k, ok, err)
			}
			if _, found, err := b.Get(ctx, k); found || err != nil {
				t.Errorf("Get(%q): got (%v, %v), want a miss", k, found, err)
			}
			if d, err := b.Delete(ctx, k); d || err != nil {
				t.Errorf("Delete(%q): got (%v, %v), want (false, nil)", k, d, err)
			}
			if d, err := b.CompareAndDelete(ctx, k, 1); d || err != nil {
				t.Errorf("CompareAndDelete(%q): got (%v, %v), want (false, nil)", k, d, err)
			}
			for _, c := range []struct {
				name string
				err  error
			}{
				{"TokenBucket", b.TokenBucket(ctx, &store.TokenBucket{Key: k, Capacity: 1, Interval: time.Second, Cost: 1})},
				{"FixedWindow", b.FixedWindow(ctx, &store.FixedWindow{Key: k, Limit: 1, Window: time.Second, Cost: 1})},
				{"SlidingWindow", b.SlidingWindow(ctx, &store.SlidingWindow{Key: k, Limit: 1, Window: time.Second, Cost: 1})},
				{"Idempotency claim", b.Idempotency(ctx, &store.Idempotency{Op: store.IdemClaim, Key: k, Owner: "A", Lease: time.Minute, Retention: time.Hour})},
				{"Idempotency inspect", b.Idempotency(ctx, &store.Idempotency{Op: store.IdemInspect, Key: k})},
				{"Lease acquire", b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: k, FenceKey: k + ":fence", Holder: "A", TTL: time.Minute})},
				{"Lease fence", b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: "lease:{0}", FenceKey: k, Holder: "A", TTL: time.Minute})},
				{"FlagWrite", b.FlagWrite(ctx, &store.FlagWrite{Key: k, AuditKey: k + ":audit", Value: []byte("on")})},
				{"FlagWrite audit", b.FlagWrite(ctx, &store.FlagWrite{Key: "flag:{0}", AuditKey: k, Value: []byte("on")})},
			} {
				if !errors.Is(c.err, store.ErrInvalidArgument) {
					t.Errorf("%s with key %q: got %v, want ErrInvalidArgument", c.name, k, c.err)
				}
			}
			for _, w := range []string{k, k + ":fence", k + ":audit", "lease:{0}", "flag:{0}"} {
				if _, found, _ := b.Get(ctx, w); found && !store.Reserved(w) {
					t.Errorf("a refused call wrote %q", w)
				}
			}
		}
	})
	t.Run("Errors", func(t *testing.T) {
		f := newFixture(t)
		b := f.Backend
		if _, _, err := b.Set(ctx, "k", nil, store.SetOptions{TTL: -2}); !errors.Is(err, store.ErrInvalidTTL) {
			t.Errorf("negative TTL: got %v, want ErrInvalidTTL", err)
		}
		if _, _, err := b.Set(ctx, "k", nil, store.SetOptions{IfAbsent: true, IfVersion: 1, TTL: store.NoTTL}); !errors.Is(err, store.ErrInvalidOptions) {
			t.Errorf("IfAbsent with IfVersion: got %v, want ErrInvalidOptions", err)
		}
		for name, err := range map[string]error{
			"TokenBucket": b.TokenBucket(ctx, nil), "FixedWindow": b.FixedWindow(ctx, nil), "SlidingWindow": b.SlidingWindow(ctx, nil),
			"Idempotency": b.Idempotency(ctx, nil), "Lease": b.Lease(ctx, nil), "FlagWrite": b.FlagWrite(ctx, nil),
		} {
			if !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%s(nil): got %v, want ErrInvalidArgument", name, err)
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := b.Get(cctx, "k"); err == nil {
			t.Errorf("Get with a cancelled context: got nil error, want one")
		}
	})
}

func runTokenBucket(t *testing.T, newFixture NewFunc) {
	f := newFixture(t)
	b := f.Backend
	u := f.unit()
	type step struct {
		advance   time.Duration
		cost      int64
		allowed   bool
		remaining int64
		retry     time.Duration
		reset     time.Duration
	}
	steps := []step{
		{0, 1, true, 2, 0, u},
		{0, 1, true, 1, 0, 2 * u},
		{0, 0, true, 1, 0, 2 * u}, // peek
		{0, 1, true, 0, 0, 3 * u},
		{0, 1, false, 0, u, 3 * u},
		{0, 2, false, 0, 2 * u, 3 * u},
		{u + f.Slack, 1, true, 0, 0, 3*u - f.Slack},
		{10 * u, 2, true, 1, 0, 2 * u},
		{0, 2, false, 1, u, 2 * u},
	}
	if f.Advance == nil {
		steps = steps[:6]
	}
	for i, s := range steps {
		if s.advance > 0 {
			f.Advance(s.advance)
		}
		d := &store.TokenBucket{Key: "tb", Capacity: 3, Interval: u, Cost: s.cost}
		decide(t, b.TokenBucket, d)
		if d.Allowed != s.allowed || d.Remaining != s.remaining {
			t.Errorf("step %d (cost %d): got allowed %v remaining %d, want %v %d", i, s.cost, d.Allowed, d.Remaining, s.allowed, s.remaining)
		}
		f.checkDur(t, fmt.Sprintf("step %d retry-after", i), d.RetryAfter, s.retry)
		f.checkDur(t, fmt.Sprintf("step %d reset", i), d.Reset, s.reset)
	}
	for _, d := range []*store.TokenBucket{
		{Key: "x", Capacity: 0, Interval: u, Cost: 1},
		{Key: "x", Capacity: 1, Interval: 0, Cost: 1},
		{Key: "x", Capacity: 1, Interval: u, Cost: 2},
		{Key: "x", Capacity: 1, Interval: u, Cost: -1},
		{Key: "x", Capacity: 1 << 62, Interval: time.Hour, Cost: 1},
	} {
		if err := b.TokenBucket(context.Background(), d); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("token bucket %+v: got %v, want ErrInvalidArgument", *d, err)
		}
	}
}

func runFixedWindow(t *testing.T, newFixture NewFunc) {
	f := newFixture(t)
	b := f.Backend
	u := f.unit()
	type step struct {
		advance   time.Duration
		cost      int64
		allowed   bool
		remaining int64
		retry     time.Duration
		reset     time.Duration
	}
	steps := []step{
		{0, 1, true, 2, 0, 10 * u},
		{0, 1, true, 1, 0, 10 * u},
		{0, 2, false, 1, 10 * u, 10 * u}, // denied: changes nothing
		{0, 1, true, 0, 0, 10 * u},
		{0, 1, false, 0, 10 * u, 10 * u},
		{4 * u, 1, false, 0, 6 * u, 6 * u},     // the window is not extended
		{6*u + f.Slack, 1, true, 2, 0, 10 * u}, // a new window
		{2 * u, 3, false, 2, 8 * u, 8 * u},
	}
	if f.Advance == nil {
		steps = steps[:5]
	}
	for i, s := range steps {
		if s.advance > 0 {
			f.Advance(s.advance)
		}
		d := &store.FixedWindow{Key: "fw", Limit: 3, Window: 10 * u, Cost: s.cost}
		decide(t, b.FixedWindow, d)
		if d.Allowed != s.allowed || d.Remaining != s.remaining {
			t.Errorf("step %d (cost %d): got allowed %v remaining %d, want %v %d", i, s.cost, d.Allowed, d.Remaining, s.allowed, s.remaining)
		}
		f.checkDur(t, fmt.Sprintf("step %d retry-after", i), d.RetryAfter, s.retry)
		f.checkDur(t, fmt.Sprintf("step %d reset", i), d.Reset, s.reset)
	}
	if err := b.FixedWindow(context.Background(), &store.FixedWindow{Key: "x", Limit: 0, Window: u, Cost: 1}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("limit 0: got %v, want ErrInvalidArgument", err)
	}
}

func runSlidingWindow(t *testing.T, newFixture NewFunc) {
	f := newFixture(t)
	needTime(t, f)
	b := f.Backend
	u := f.unit()
	type step struct {
		advance   time.Duration
		cost      int64
		allowed   bool
		remaining int64
		retry     time.Duration
		reset     time.Duration
	}
	steps := []step{
		{0, 1, true, 2, 0, 10 * u},              // t0
		{3 * u, 1, true, 1, 0, 10 * u},          // t3
		{3 * u, 1, true, 0, 0, 10 * u},          // t6
		{1 * u, 1, false, 0, 3 * u, 9 * u},      // t7: t0 leaves at t10
		{1 * u, 2, false, 0, 5 * u, 8 * u},      // t8: t0 and t3 must leave
		{2*u + f.Slack, 1, true, 0, 0, 10 * u},  // t10: t0 left
		{10*u + f.Slack, 3, true, 0, 0, 10 * u}, // t20: all left
	}
	for i, s := range steps {
		if s.advance > 0 {
			f.Advance(s.advance)
		}
		d := &store.SlidingWindow{Key: "sw", Limit: 3, Window: 10 * u, Cost: s.cost}
		decide(t, b.SlidingWindow, d)
		if d.Allowed != s.allowed || d.Remaining != s.remaining {
			t.Errorf("step %d (cost %d): got allowed %v remaining %d, want %v %d", i, s.cost, d.Allowed, d.Remaining, s.allowed, s.remaining)
		}
		f.checkDur(t, fmt.Sprintf("step %d retry-after", i), d.RetryAfter, s.retry)
		f.checkDur(t, fmt.Sprintf("step %d reset", i), d.Reset, s.reset)
	}
	if err := b.SlidingWindow(context.Background(), &store.SlidingWindow{Key: "x", Limit: store.MaxSlidingLimit + 1, Window: u, Cost: 1}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("limit too large: got %v, want ErrInvalidArgument", err)
	}
}

func runIdempotency(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	idem := func(t *testing.T, b store.Backend, op store.IdemOp, owner, fp string, result string, u time.Duration) *store.Idempotency {
		t.Helper()
		d := &store.Idempotency{Op: op, Key: "idem", Fingerprint: []byte(fp), Owner: owner, Lease: 5 * u, Retention: 100 * u}
		if result != "" {
			d.Result = []byte(result)
		}
		decide(t, b.Idempotency, d)
		return d
	}
	t.Run("Lifecycle", func(t *testing.T) {
		f := newFixture(t)
		b, u := f.Backend, f.unit()
		type step struct {
			op      store.IdemOp
			owner   string
			fp      string
			result  string
			want    store.IdemOutcome
			wantRes string
			holder  string
		}
		steps := []step{
			{store.IdemInspect, "", "", "", store.IdemAbsent, "", ""},
			{store.IdemComplete, "A", "", "r", store.IdemAbsent, "", ""},
			{store.IdemClaim, "A", "fp1", "", store.IdemClaimed, "", ""},
			{store.IdemClaim, "B", "fp1", "", store.IdemInProgress, "", "A"},
			{store.IdemClaim, "B", "fp2", "", store.IdemMismatch, "", ""},
			{store.IdemInspect, "", "", "", store.IdemInProgress, "", "A"},
			{store.IdemComplete, "B", "", "evil", store.IdemNotOwner, "", "A"},
			{store.IdemRelease, "B", "", "", store.IdemNotOwner, "", "A"},
			{store.IdemComplete, "A", "", "result-1", store.IdemCompleted, "result-1", ""},
			{store.IdemComplete, "A", "", "result-2", store.IdemCompleted, "result-1", ""},
			{store.IdemClaim, "C", "fp1", "", store.IdemCompleted, "result-1", ""},
			{store.IdemClaim, "C", "fp2", "", store.IdemMismatch, "", ""},
			{store.IdemRelease, "A", "", "", store.IdemCompleted, "result-1", ""},
		}
		for i, s := range steps {
			d := idem(t, b, s.op, s.owner, s.fp, s.result, u)
			if d.Outcome != s.want || string(d.StoredResult) != s.wantRes || d.Holder != s.holder {
				t.Errorf("step %d: got (%v, %q, holder %q), want (%v, %q, holder %q)", i, d.Outcome, d.StoredResult, d.Holder, s.want, s.wantRes, s.holder)
			}
			if s.want == store.IdemInProgress && s.op == store.IdemClaim {
				f.checkDur(t, fmt.Sprintf("step %d lease left", i), d.LeaseLeft, 5*u)
			}
		}
	})
	t.Run("Release", func(t *testing.T) {
		f := newFixture(t)
		b, u := f.Backend, f.unit()
		idem(t, b, store.IdemClaim, "A", "fp", "", u)
		if d := idem(t, b, store.IdemRelease, "A", "", "", u); d.Outcome != store.IdemReleased {
			t.Fatalf("release by owner: got %v, want released", d.Outcome)
		}
		if d := idem(t, b, store.IdemClaim, "B", "fp2", "", u); d.Outcome != store.IdemClaimed {
			t.Fatalf("claim after release: got %v, want claimed", d.Outcome)
		}
	})
	t.Run("RecoveryAndRetention", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		b, u := f.Backend, f.unit()
		idem(t, b, store.IdemClaim, "A", "fp", "", u)
		f.Advance(3 * u)
		if d := idem(t, b, store.IdemClaim, "B", "fp", "", u); d.Outcome != store.IdemInProgress {
			t.Fatalf("claim during the lease: got %v, want in progress", d.Outcome)
		} else {
			f.checkDur(t, "lease left", d.LeaseLeft, 2*u)
			f.checkDur(t, "retention left", d.TTL, 97*u)
		}
		f.Advance(2*u + f.Slack)
		d := idem(t, b, store.IdemClaim, "B", "fp", "", u)
		if d.Outcome != store.IdemRecovered || d.PrevOwner != "A" {
			t.Fatalf("claim after the lease lapsed: got (%v, prev %q), want (recovered, prev \"A\")", d.Outcome, d.PrevOwner)
		}
		f.checkDur(t, "retention kept by recovery", d.TTL, 95*u-f.Slack)
		if d := idem(t, b, store.IdemComplete, "A", "", "late", u); d.Outcome != store.IdemNotOwner || d.Holder != "B" {
			t.Fatalf("completion by the dead owner: got (%v, holder %q), want (not owner, \"B\")", d.Outcome, d.Holder)
		}
		if d := idem(t, b, store.IdemComplete, "B", "", "ok", u); d.Outcome != store.IdemCompleted {
			t.Fatalf("completion by the new owner: got %v, want completed", d.Outcome)
		}
		f.Advance(90 * u)
		if d := idem(t, b, store.IdemInspect, "", "", "", u); d.Outcome != store.IdemCompleted {
			t.Fatalf("inspect within retention: got %v, want completed", d.Outcome)
		}
		f.Advance(5*u + f.Slack)
		if d := idem(t, b, store.IdemClaim, "C", "other", "", u); d.Outcome != store.IdemClaimed {
			t.Fatalf("claim after retention: got %v, want claimed (retention is fixed, reads do not extend it)", d.Outcome)
		}
	})
	t.Run("HugeLeaseRecovery", func(t *testing.T) {
		// A claim that would take over a lapsed record with a lease beyond
		// MaxTTL is ErrInvalidArgument on every backend, with the record
		// unchanged: granted, a deadline that wrapped around would let
		// the next claim take the record over at once, and two owners
		// would execute.
		f := newFixture(t)
		needTime(t, f)
		b, u := f.Backend, f.unit()
		idem(t, b, store.IdemClaim, "A", "fp", "", u)
		f.Advance(5*u + f.Slack)
		for _, huge := range []time.Duration{store.MaxTTL + time.Nanosecond, math.MaxInt64} {
			d := &store.Idempotency{Op: store.IdemClaim, Key: "idem", Fingerprint: []byte("fp"), Owner: "B", Lease: huge, Retention: huge}
			if err := b.Idempotency(ctx, d); !errors.Is(err, store.ErrInvalidArgument) {
				t.Fatalf("claim with a lease of %v: got (%v, %v), want ErrInvalidArgument", huge, d.Outcome, err)
			}
			if in := idem(t, b, store.IdemInspect, "", "", "", u); in.Outcome != store.IdemInProgress || in.Holder != "A" {
				t.Fatalf("a refused claim changed the record: got (%v, holder %q), want (in progress, \"A\")", in.Outcome, in.Holder)
			}
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		f := newFixture(t)
		for _, d := range []*store.Idempotency{
			{Op: store.IdemClaim, Key: "k", Owner: "", Lease: time.Second, Retention: time.Hour},
			{Op: store.IdemClaim, Key: "k", Owner: "a", Lease: 0, Retention: time.Hour},
			{Op: store.IdemClaim, Key: "k", Owner: "a", Lease: time.Hour, Retention: time.Second},
			{Op: store.IdemComplete, Key: "k"},
			{Op: 99, Key: "k"},
		} {
			if err := f.Backend.Idempotency(ctx, d); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%+v: got %v, want ErrInvalidArgument", *d, err)
			}
		}
	})
}

func runLease(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	lease := func(t *testing.T, b store.Backend, op store.LeaseOp, holder string, token uint64, ttl time.Duration) *store.Lease {
		t.Helper()
		d := &store.Lease{Op: op, Key: "lease:{r}", FenceKey: "lease:{r}:fence", Holder: holder, Token: token, TTL: ttl}
		decide(t, b.Lease, d)
		return d
	}
	t.Run("Lifecycle", func(t *testing.T) {
		f := newFixture(t)
		b, u := f.Backend, f.unit()
		if d := lease(t, b, store.LeaseInspect, "", 0, 0); d.OK || d.Fence != 0 {
			t.Fatalf("inspect a fresh lease: got (ok %v, fence %d), want (false, 0)", d.OK, d.Fence)
		}
		a := lease(t, b, store.LeaseAcquire, "A", 0, 10*u)
		if !a.OK || a.Current.Token != 1 || a.Current.Holder != "A" || a.Fence != 1 {
			t.Fatalf("first acquire: got %+v, want ok with token 1", *a)
		}
		if d := lease(t, b, store.LeaseAcquire, "B", 0, 10*u); d.OK || d.Current.Holder != "A" || d.Current.Token != 1 {
			t.Fatalf("acquire of a held lease: got %+v, want refused naming A/1", *d)
		}
		if d := lease(t, b, store.LeaseAcquire, "A", 0, 10*u); d.OK {
			t.Fatal("re-acquire by the holder succeeded, want refused (use renew)")
		}
		if d := lease(t, b, store.LeaseRenew, "A", 2, 10*u); d.OK {
			t.Fatal("renew with a wrong token succeeded")
		}
		if d := lease(t, b, store.LeaseRenew, "B", 1, 10*u); d.OK {
			t.Fatal("renew by a non-holder succeeded")
		}
		if d := lease(t, b, store.LeaseRenew, "A", 1, 20*u); !d.OK {
			t.Fatal("renew by the holder failed")
		} else {
			f.checkDur(t, "renewed TTL", d.Current.TTL, 20*u)
		}
		if d := lease(t, b, store.LeaseRelease, "B", 1, 0); d.OK {
			t.Fatal("release by a non-holder succeeded")
		}
		if d := lease(t, b, store.LeaseRelease, "A", 1, 0); !d.OK || d.Current.Holder != "" {
			t.Fatalf("release by the holder: got %+v, want ok and no current lease", *d)
		}
		if d := lease(t, b, store.LeaseAcquire, "B", 0, 10*u); !d.OK || d.Current.Token != 2 {
			t.Fatalf("acquire after release: got %+v, want token 2", *d)
		}
		lease(t, b, store.LeaseRelease, "B", 2, 0)
		d := &store.Lease{Op: store.LeaseAcquire, Key: "lease:{r}", FenceKey: "lease:{r}:fence", Holder: "C", TTL: u, MinToken: 100}
		decide(t, b.Lease, d)
		if !d.OK || d.Current.Token != 100 {
			t.Fatalf("acquire with MinToken 100: got %+v, want token 100", *d)
		}
		it, ok, _ := b.Get(ctx, "lease:{r}:fence")
		if !ok || string(it.Value) != "100" || it.TTL != store.NoTTL {
			t.Fatalf("fence key: got (%q, ttl %v, %v), want (\"100\", NoTTL, true)", it.Value, it.TTL, ok)
		}
	})
	t.Run("Expiry", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		b, u := f.Backend, f.unit()
		lease(t, b, store.LeaseAcquire, "A", 0, 2*u)
		f.Advance(2*u + f.Slack)
		if d := lease(t, b, store.LeaseRenew, "A", 1, 2*u); d.OK {
			t.Fatal("renew after expiry succeeded")
		}
		if d := lease(t, b, store.LeaseAcquire, "B", 0, 2*u); !d.OK || d.Current.Token != 2 {
			t.Fatalf("acquire after expiry: got %+v, want token 2", *d)
		}
		if d := lease(t, b, store.LeaseRelease, "A", 1, 0); d.OK {
			t.Fatal("release by an expired holder succeeded")
		}
	})
	t.Run("HostileFence", func(t *testing.T) {
		// A fence key holding what no acquisition wrote (a negative
		// number, a float, hex, spaces, a sign, NaN) is ErrCorrupt for an
		// acquisition, with the fence and the lease left as they were:
		// never token 0, nor a token derived from a misread number. (A
		// fence of -1 once handed out token 0 on both backends.)
		for _, v := range []string{"-1", "-5", "+3", "1.5", "0x10", " 7", "1e3", "nan", ""} {
			f := newFixture(t)
			b := f.Backend
			if _, _, err := b.Set(ctx, "lease:{r}:fence", []byte(v), store.SetOptions{TTL: store.NoTTL}); err != nil {
				t.Fatal(err)
			}
			d := &store.Lease{Op: store.LeaseAcquire, Key: "lease:{r}", FenceKey: "lease:{r}:fence", Holder: "A", TTL: time.Minute}
			if err := b.Lease(ctx, d); !errors.Is(err, store.ErrCorrupt) || d.OK {
				t.Errorf("acquire over a fence of %q: got (ok %v, token %d, %v), want ErrCorrupt", v, d.OK, d.Current.Token, err)
			}
			if it, ok, err := b.Get(ctx, "lease:{r}:fence"); !ok || err != nil || string(it.Value) != v {
				t.Errorf("fence %q after the refused acquire: got (%q, %v, %v), want it unchanged", v, it.Value, ok, err)
			}
			if _, ok, _ := b.Get(ctx, "lease:{r}"); ok {
				t.Errorf("fence %q: the refused acquire wrote a lease record", v)
			}
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		f := newFixture(t)
		for _, d := range []*store.Lease{
			{Op: store.LeaseAcquire, Key: "k", FenceKey: "f", Holder: "", TTL: time.Second},
			{Op: store.LeaseAcquire, Key: "k", FenceKey: "f", Holder: "a", TTL: 0},
			{Op: store.LeaseAcquire, Key: "k", FenceKey: "k", Holder: "a", TTL: time.Second},
			{Op: 9, Key: "k", FenceKey: "f"},
		} {
			if err := f.Backend.Lease(ctx, d); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%+v: got %v, want ErrInvalidArgument", *d, err)
			}
		}
	})
}

func runFlagWrite(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	f := newFixture(t)
	b := f.Backend
	w := func(ifv uint64, val, audit string, keep int) *store.FlagWrite {
		d := &store.FlagWrite{Key: "flag:{f}", IfVersion: ifv, Value: []byte(val), AuditKey: "flag:{f}:audit", Audit: []byte(audit), AuditKeep: keep}
		decide(t, b.FlagWrite, d)
		return d
	}
	d1 := w(0, "on", "a1", 0)
	if !d1.OK || d1.Version == 0 {
		t.Fatalf("create: got %+v, want ok", *d1)
	}
	if d := w(0, "off", "bad", 0); d.OK || d.Current != d1.Version {
		t.Fatalf("create of an existing flag: got %+v, want refused with current v%d", *d, d1.Version)
	}
	d2 := w(d1.Version, "off", "a2", 0)
	if !d2.OK || d2.Version == d1.Version {
		t.Fatalf("CAS: got %+v, want ok with a new version", *d2)
	}
	if d := w(d1.Version, "stale", "bad", 0); d.OK || d.Current != d2.Version {
		t.Fatalf("stale CAS: got %+v, want refused with current v%d", *d, d2.Version)
	}
	it, _, _ := b.Get(ctx, "flag:{f}")
	if string(it.Value) != "off" || it.Version != d2.Version || it.TTL != store.NoTTL {
		t.Fatalf("flag: got (%q, v%d, ttl %v), want (\"off\", v%d, NoTTL)", it.Value, it.Version, it.TTL, d2.Version)
	}
	logOf := func() string {
		it, _, _ := b.Get(ctx, "flag:{f}:audit")
		recs, err := store.DecodeLog(it.Value)
		if err != nil {
			t.Fatal(err)
		}
		return string(bytes.Join(recs, []byte(",")))
	}
	if got := logOf(); got != "a1,a2" {
		t.Fatalf("audit log: got %q, want \"a1,a2\"", got)
	}
	d3 := w(d2.Version, "x", "a3", 2)
	if !d3.OK {
		t.Fatal("write with AuditKeep failed")
	}
	if got := logOf(); got != "a2,a3" {
		t.Fatalf("audit log kept to 2: got %q, want \"a2,a3\"", got)
	}
	if err := b.FlagWrite(ctx, &store.FlagWrite{Key: "k", AuditKey: "k"}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("flag and audit on one key: got %v, want ErrInvalidArgument", err)
	}
}

// workers runs fn(i) on n goroutines at once and waits.
func workers(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

func runConcurrency(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	const n = 64
	t.Run("TokenBucket", func(t *testing.T) {
		f := newFixture(t)
		var admitted atomic.Int64
		workers(n, func(int) {
			for range 4 {
				d := &store.TokenBucket{Key: "tb", Capacity: 50, Interval: 1000 * f.unit(), Cost: 1}
				if err := f.Backend.TokenBucket(ctx, d); err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
		if got := admitted.Load(); got != 50 {
			t.Fatalf("admitted %d of %d requests, want exactly the capacity 50", got, 4*n)
		}
	})
	t.Run("FixedWindow", func(t *testing.T) {
		f := newFixture(t)
		var admitted atomic.Int64
		workers(n, func(int) {
			for range 4 {
				d := &store.FixedWindow{Key: "fw", Limit: 100, Window: 1000 * f.unit(), Cost: 1}
				if err := f.Backend.FixedWindow(ctx, d); err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
		if got := admitted.Load(); got != 100 {
			t.Fatalf("admitted %d, want exactly the limit 100", got)
		}
	})
	t.Run("SlidingWindow", func(t *testing.T) {
		f := newFixture(t)
		var admitted atomic.Int64
		workers(n, func(int) {
			for range 4 {
				d := &store.SlidingWindow{Key: "sw", Limit: 100, Window: 1000 * f.unit(), Cost: 1}
				if err := f.Backend.SlidingWindow(ctx, d); err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
		if got := admitted.Load(); got != 100 {
			t.Fatalf("admitted %d, want exactly the limit 100", got)
		}
	})
	t.Run("IdempotencyClaim", func(t *testing.T) {
		f := newFixture(t)
		var claimed atomic.Int64
		workers(n, func(i int) {
			d := &store.Idempotency{Op: store.IdemClaim, Key: "idem", Fingerprint: []byte("fp"), Owner: fmt.Sprint("o", i), Lease: f.unit() * 100, Retention: f.unit() * 1000}
			if err := f.Backend.Idempotency(ctx, d); err != nil {
				t.Error(err)
				return
			}
			if d.Outcome == store.IdemClaimed {
				claimed.Add(1)
			} else if d.Outcome != store.IdemInProgress {
				t.Errorf("duplicate claim: got %v, want in progress", d.Outcome)
			}
		})
		if got := claimed.Load(); got != 1 {
			t.Fatalf("claims won: got %d, want 1", got)
		}
	})
	t.Run("LeaseAcquire", func(t *testing.T) {
		f := newFixture(t)
		var won atomic.Int64
		tokens := make([]uint64, n)
		workers(n, func(i int) {
			for range 20 {
				d := &store.Lease{Op: store.LeaseAcquire, Key: "lease:{l}", FenceKey: "lease:{l}:fence", Holder: fmt.Sprint("h", i), TTL: 100 * f.unit()}
				if err := f.Backend.Lease(ctx, d); err != nil {
					t.Error(err)
					return
				}
				if d.OK {
					won.Add(1)
					tokens[i] = d.Current.Token
					r := &store.Lease{Op: store.LeaseRelease, Key: "lease:{l}", FenceKey: "lease:{l}:fence", Holder: d.Holder, Token: d.Current.Token}
					if err := f.Backend.Lease(ctx, r); err != nil || !r.OK {
						t.Errorf("release by the holder: got (%v, %v), want ok", r.OK, err)
					}
				}
			}
		})
		d := &store.Lease{Op: store.LeaseInspect, Key: "lease:{l}", FenceKey: "lease:{l}:fence"}
		decide(t, f.Backend.Lease, d)
		if d.Fence != uint64(won.Load()) {
			t.Fatalf("fence after %d acquisitions: got %d, want one token per acquisition", won.Load(), d.Fence)
		}
	})
	t.Run("FlagWrite", func(t *testing.T) {
		f := newFixture(t)
		var won atomic.Int64
		workers(n, func(i int) {
			for range 10 {
				cur := uint64(0)
				if it, ok, err := f.Backend.Get(ctx, "flag:{c}"); err != nil {
					t.Error(err)
					return
				} else if ok {
					cur = it.Version
				}
				d := &store.FlagWrite{Key: "flag:{c}", IfVersion: cur, Value: []byte(fmt.Sprint(i)), AuditKey: "flag:{c}:audit", Audit: []byte(fmt.Sprint(i))}
				if err := f.Backend.FlagWrite(ctx, d); err != nil {
					t.Error(err)
					return
				}
				if d.OK {
					won.Add(1)
				}
			}
		})
		it, _, _ := f.Backend.Get(ctx, "flag:{c}:audit")
		recs, err := store.DecodeLog(it.Value)
		if err != nil || int64(len(recs)) != won.Load() {
			t.Fatalf("audit records: got %d (%v), want one per successful write (%d)", len(recs), err, won.Load())
		}
	})
}
