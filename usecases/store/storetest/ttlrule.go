package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// badTTLs are TTL arguments that must be refused: 0 (a TTL computed from a
// deadline that has just passed, or rounded down) and every negative other
// than store.NoTTL. None of them may ever mean "no expiry".
var badTTLs = []time.Duration{0, -2, -time.Millisecond, -time.Second, math.MinInt64}

// runTTLRule checks the seam's TTL rule (store package doc, "TTLs"): no
// TTL is said with store.NoTTL; a TTL of 0 or a negative other than NoTTL
// is ErrInvalidArgument on every primitive and decision that takes one,
// with nothing changed; the smallest positive TTL, 1 ns, is a TTL.
func runTTLRule(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	t.Run("SetRefusesZeroAndNegative", func(t *testing.T) {
		f := newFixture(t)
		b := f.Backend
		u := f.unit()
		for _, ttl := range badTTLs {
			for _, shape := range []struct {
				name string
				o    func(v uint64) store.SetOptions
			}{
				{"plain", func(uint64) store.SetOptions { return store.SetOptions{TTL: ttl} }},
				{"IfAbsent", func(uint64) store.SetOptions { return store.SetOptions{TTL: ttl, IfAbsent: true} }},
				{"IfVersion", func(v uint64) store.SetOptions { return store.SetOptions{TTL: ttl, IfVersion: v} }},
			} {
				name := fmt.Sprintf("%s/ttl=%d", shape.name, int64(ttl))
				v := mustSet(t, b, "{k}", "old", store.SetOptions{TTL: 50 * u})
				_, ok, err := b.Set(ctx, "{k}", []byte("new"), shape.o(v))
				if ok || !errors.Is(err, store.ErrInvalidArgument) || !errors.Is(err, store.ErrInvalidTTL) {
					t.Errorf("%s on an existing key: got (ok %v, %v), want ErrInvalidArgument and ErrInvalidTTL", name, ok, err)
				}
				it, found, _ := b.Get(ctx, "{k}")
				if !found || string(it.Value) != "old" || it.Version != v || it.TTL == store.NoTTL {
					t.Errorf("%s: a refused write changed the key: got (%q, v%d, ttl %v, found %v), want (\"old\", v%d, a TTL)", name, it.Value, it.Version, it.TTL, found, v)
				}
				if shape.name != "IfVersion" {
					if _, ok, err := b.Set(ctx, "{missing}", []byte("new"), shape.o(0)); ok || !errors.Is(err, store.ErrInvalidArgument) {
						t.Errorf("%s on a missing key: got (ok %v, %v), want ErrInvalidArgument", name, ok, err)
					}
					if _, found, _ := b.Get(ctx, "{missing}"); found {
						t.Errorf("%s: a refused write created the key", name)
					}
				}
			}
		}
	})
	t.Run("SetNoTTL", func(t *testing.T) {
		f := newFixture(t)
		b := f.Backend
		u := f.unit()
		v1 := mustSet(t, b, "{k}", "a", store.SetOptions{TTL: 50 * u})
		v2, ok, err := b.Set(ctx, "{k}", []byte("b"), store.SetOptions{IfVersion: v1, TTL: store.NoTTL})
		if !ok || err != nil {
			t.Fatalf("CAS with NoTTL: got (ok %v, %v), want (true, nil)", ok, err)
		}
		if it, _, _ := b.Get(ctx, "{k}"); it.Version != v2 || it.TTL != store.NoTTL {
			t.Errorf("after a write with NoTTL: got (v%d, ttl %v), want (v%d, NoTTL)", it.Version, it.TTL, v2)
		}
		if _, ok, err := b.Set(ctx, "{n}", []byte("x"), store.SetOptions{IfAbsent: true, TTL: store.NoTTL}); !ok || err != nil {
			t.Fatalf("set-if-absent with NoTTL: got (ok %v, %v), want (true, nil)", ok, err)
		}
		if it, _, _ := b.Get(ctx, "{n}"); it.TTL != store.NoTTL {
			t.Errorf("created with NoTTL: got ttl %v, want NoTTL", it.TTL)
		}
	})
	t.Run("SetOneNanosecond", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		b := f.Backend
		if _, ok, err := b.Set(ctx, "{k}", []byte("x"), store.SetOptions{TTL: time.Nanosecond}); !ok || err != nil {
			t.Fatalf("Set with TTL 1ns: got (ok %v, %v), want (true, nil)", ok, err)
		}
		if f.Slack == 0 { // an exact clock has not moved: the key is live, 1ns left
			if it, found, _ := b.Get(ctx, "{k}"); !found || it.TTL != time.Nanosecond {
				t.Errorf("Set with TTL 1ns, clock not moved: got (found %v, ttl %v), want (true, 1ns)", found, it.TTL)
			}
		}
		f.Advance(f.unit())
		if _, found, _ := b.Get(ctx, "{k}"); found {
			t.Error("a key written with TTL 1ns never expired")
		}
	})
	t.Run("Bounds", func(t *testing.T) { runTTLBounds(t, newFixture) })
	t.Run("DecisionsRefuseZeroAndNegative", func(t *testing.T) {
		f := newFixture(t)
		b := f.Backend
		u := f.unit()
		// A live lease and a claimed record, which no refused decision may
		// change.
		ld := &store.Lease{Op: store.LeaseAcquire, Key: "lease:{r}", FenceKey: "lease:{r}:fence", Holder: "A", TTL: 50 * u}
		decide(t, b.Lease, ld)
		tok := ld.Current.Token
		id := &store.Idempotency{Op: store.IdemClaim, Key: "{idem}", Fingerprint: []byte("fp"), Owner: "A", Lease: 5 * u, Retention: 50 * u}
		decide(t, b.Idempotency, id)
		for _, ttl := range append(badTTLs, store.NoTTL) {
			for _, c := range []struct {
				name string
				run  func() error
			}{
				{"Lease acquire", func() error {
					return b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: "lease:{s}", FenceKey: "lease:{s}:fence", Holder: "B", TTL: ttl})
				}},
				{"Lease renew", func() error {
					return b.Lease(ctx, &store.Lease{Op: store.LeaseRenew, Key: "lease:{r}", FenceKey: "lease:{r}:fence", Holder: "A", Token: tok, TTL: ttl})
				}},
				{"Idempotency claim lease", func() error {
					return b.Idempotency(ctx, &store.Idempotency{Op: store.IdemClaim, Key: "{idem2}", Fingerprint: []byte("fp"), Owner: "B", Lease: ttl, Retention: 50 * u})
				}},
				{"Idempotency claim retention", func() error {
					return b.Idempotency(ctx, &store.Idempotency{Op: store.IdemClaim, Key: "{idem2}", Fingerprint: []byte("fp"), Owner: "B", Lease: 5 * u, Retention: ttl})
				}},
				{"FixedWindow", func() error {
					return b.FixedWindow(ctx, &store.FixedWindow{Key: "{fw}", Limit: 5, Window: ttl, Cost: 1})
				}},
				{"SlidingWindow", func() error {
					return b.SlidingWindow(ctx, &store.SlidingWindow{Key: "{sw}", Limit: 5, Window: ttl, Cost: 1})
				}},
				{"TokenBucket", func() error {
					return b.TokenBucket(ctx, &store.TokenBucket{Key: "{tb}", Capacity: 5, Interval: ttl, Cost: 1})
				}},
			} {
				if err := c.run(); !errors.Is(err, store.ErrInvalidArgument) {
					t.Errorf("%s with ttl %d: got %v, want ErrInvalidArgument", c.name, int64(ttl), err)
				}
			}
		}
		for _, k := range []string{"lease:{s}", "{idem2}", "{fw}", "{sw}", "{tb}"} {
			if _, found, _ := b.Get(ctx, k); found {
				t.Errorf("a refused decision created %q", k)
			}
		}
		in := &store.Lease{Op: store.LeaseInspect, Key: "lease:{r}", FenceKey: "lease:{r}:fence"}
		decide(t, b.Lease, in)
		if !in.OK || in.Current.Holder != "A" || in.Current.Token != tok || in.Current.TTL <= 0 {
			t.Errorf("a refused renew changed the lease: got %+v, want A's token %d with a TTL", in.Current, tok)
		}
		ii := &store.Idempotency{Op: store.IdemInspect, Key: "{idem}"}
		decide(t, b.Idempotency, ii)
		if ii.Outcome != store.IdemInProgress || ii.Holder != "A" || ii.TTL <= 0 {
			t.Errorf("the claimed record changed: got %v held by %q, ttl %v, want in progress by A with a TTL", ii.Outcome, ii.Holder, ii.TTL)
		}
	})
}

// runTTLBounds checks the upper bound of every duration the seam takes
// (store package doc, "TTLs"): store.MaxTTL, and anything shorter, is
// accepted by every backend; anything longer (MaxTTL+1ns, MaxTTL+1ms,
// math.MaxInt64) is ErrInvalidArgument (for Set, also ErrInvalidTTL), with
// nothing changed, whatever the backend's clock or granularity. The same
// bound holds for a token bucket's horizon, Capacity × Interval.
func runTTLBounds(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	f := newFixture(t)
	b, u := f.Backend, f.unit()
	const maxTTL = store.MaxTTL
	durations := []struct {
		d    time.Duration
		want bool // accepted
	}{
		{maxTTL, true},
		{maxTTL - time.Nanosecond, true},
		{maxTTL + time.Nanosecond, false},
		{maxTTL + time.Microsecond, false},
		{maxTTL + time.Millisecond, false},
		{time.Duration(math.MaxInt64), false},
	}
	// A live lease and a claimed record that a refused renew or claim must
	// leave as they were.
	held := &store.Lease{Op: store.LeaseAcquire, Key: "lease:{held}", FenceKey: "lease:{held}:fence", Holder: "A", TTL: 50 * u}
	decide(t, b.Lease, held)
	// long checks a TTL reported for a duration d that was accepted: d, or
	// at most an hour (real time spent, granularity) less; never more than
	// d rounded up to a millisecond.
	long := func(what string, got, d time.Duration) {
		t.Helper()
		if got > d+time.Millisecond || got < d-time.Hour {
			t.Errorf("%s: reported %v, want about %v", what, got, d)
		}
	}
	check := func(name string, d time.Duration, want bool, err error, ttlToo bool) bool {
		t.Helper()
		switch {
		case want && err != nil:
			t.Errorf("%s with %v (MaxTTL%+d ns): got %v, want it accepted", name, d, int64(d-maxTTL), err)
		case !want && (!errors.Is(err, store.ErrInvalidArgument) || ttlToo && !errors.Is(err, store.ErrInvalidTTL)):
			t.Errorf("%s with %v (MaxTTL%+d ns): got %v, want ErrInvalidArgument%s", name, d, int64(d-maxTTL), err, map[bool]string{true: " and ErrInvalidTTL"}[ttlToo])
		default:
			return err == nil
		}
		return false
	}
	absent := func(name, key string) {
		t.Helper()
		if _, found, _ := b.Get(ctx, key); found {
			t.Errorf("%s: a refused call created %q", name, key)
		}
	}
	for i, c := range durations {
		d := c.d
		key := func(s string) string { return fmt.Sprintf("%s:{%d}", s, i) }
		// Set, in each of its three shapes.
		_, ok, err := b.Set(ctx, key("set"), []byte("x"), store.SetOptions{TTL: d})
		if check("Set", d, c.want, err, true) && ok {
			it, _, _ := b.Get(ctx, key("set"))
			long("Set's TTL", it.TTL, d)
		} else if !c.want {
			absent("Set", key("set"))
		}
		_, _, err = b.Set(ctx, key("setnx"), []byte("x"), store.SetOptions{TTL: d, IfAbsent: true})
		if !check("Set IfAbsent", d, c.want, err, true) && !c.want {
			absent("Set IfAbsent", key("setnx"))
		}
		v := mustSet(t, b, key("cas"), "old", store.SetOptions{TTL: 50 * u})
		_, _, err = b.Set(ctx, key("cas"), []byte("new"), store.SetOptions{TTL: d, IfVersion: v})
		if !check("Set IfVersion", d, c.want, err, true) && !c.want {
			if it, _, _ := b.Get(ctx, key("cas")); string(it.Value) != "old" || it.Version != v {
				t.Errorf("Set IfVersion with %v: a refused write changed the key to (%q, v%d)", d, it.Value, it.Version)
			}
		}
		// Lease: acquire, and renew of a held lease.
		la := &store.Lease{Op: store.LeaseAcquire, Key: key("lease"), FenceKey: key("lease") + ":fence", Holder: "B", TTL: d}
		if check("Lease acquire", d, c.want, b.Lease(ctx, la), false) {
			long("Lease acquire's TTL", la.Current.TTL, d)
		} else if !c.want {
			absent("Lease acquire", key("lease"))
		}
		lr := &store.Lease{Op: store.LeaseRenew, Key: held.Key, FenceKey: held.FenceKey, Holder: "A", Token: held.Current.Token, TTL: d}
		if check("Lease renew", d, c.want, b.Lease(ctx, lr), false) {
			long("Lease renew's TTL", lr.Current.TTL, d)
			back := &store.Lease{Op: store.LeaseRenew, Key: held.Key, FenceKey: held.FenceKey, Holder: "A", Token: held.Current.Token, TTL: 50 * u}
			decide(t, b.Lease, back)
		} else if !c.want {
			in := &store.Lease{Op: store.LeaseInspect, Key: held.Key, FenceKey: held.FenceKey}
			decide(t, b.Lease, in)
			if !in.OK || in.Current.Holder != "A" || in.Current.TTL > 50*u {
				t.Errorf("Lease renew with %v: a refused renew changed the lease to %+v", d, in.Current)
			}
		}
		// Idempotency claim: the lease and the retention at d, and the
		// retention alone.
		ic := &store.Idempotency{Op: store.IdemClaim, Key: key("idem"), Fingerprint: []byte("fp"), Owner: "A", Lease: d, Retention: d}
		if check("Idempotency claim (lease and retention)", d, c.want, b.Idempotency(ctx, ic), false) {
			long("Idempotency claim's TTL", ic.TTL, d)
		} else if !c.want {
			absent("Idempotency claim", key("idem"))
		}
		ir := &store.Idempotency{Op: store.IdemClaim, Key: key("idem2"), Fingerprint: []byte("fp"), Owner: "A", Lease: u, Retention: d}
		if check("Idempotency claim (retention)", d, c.want, b.Idempotency(ctx, ir), false) {
			long("Idempotency claim's TTL", ir.TTL, d)
		} else if !c.want {
			absent("Idempotency claim (retention)", key("idem2"))
		}
		// The limiters' windows and interval.
		fw := &store.FixedWindow{Key: key("fw"), Limit: 5, Window: d, Cost: 1}
		if check("FixedWindow", d, c.want, b.FixedWindow(ctx, fw), false) {
			long("FixedWindow's reset", fw.Reset, d)
		} else if !c.want {
			absent("FixedWindow", key("fw"))
		}
		sw := &store.SlidingWindow{Key: key("sw"), Limit: 5, Window: d, Cost: 1}
		if check("SlidingWindow", d, c.want, b.SlidingWindow(ctx, sw), false) {
			long("SlidingWindow's reset", sw.Reset, d)
		} else if !c.want {
			absent("SlidingWindow", key("sw"))
		}
		tb := &store.TokenBucket{Key: key("tb"), Capacity: 1, Interval: d, Cost: 1}
		if check("TokenBucket interval", d, c.want, b.TokenBucket(ctx, tb), false) {
			long("TokenBucket's reset", tb.Reset, d)
		} else if !c.want {
			absent("TokenBucket", key("tb"))
		}
	}
	// A token bucket's horizon, Capacity × Interval, has the same bound.
	for _, c := range []struct {
		capacity int64
		interval time.Duration
		want     bool
	}{
		{2, maxTTL / 2, true},
		{1000, maxTTL / 1000, true},
		{2, maxTTL/2 + time.Nanosecond, false},
		{2, maxTTL/2 + time.Millisecond, false},
		{1000, maxTTL/1000 + time.Microsecond, false},
	} {
		d := time.Duration(c.capacity) * c.interval
		tb := &store.TokenBucket{Key: fmt.Sprintf("tb:{%d×%d}", c.capacity, c.interval), Capacity: c.capacity, Interval: c.interval, Cost: 1}
		if check(fmt.Sprintf("TokenBucket %d × %v", c.capacity, c.interval), d, c.want, b.TokenBucket(ctx, tb), false) {
			long("TokenBucket's reset", tb.Reset, c.interval)
		} else if !c.want {
			absent("TokenBucket", tb.Key)
		}
	}
}
