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
	t.Run("HugeTTLs", func(t *testing.T) { runHugeTTLs(t, newFixture) })
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

// runHugeTTLs checks durations far beyond MaxTTL (math.MaxInt64, whose
// deadline overflows an int64 clock in nanoseconds): a backend may accept
// them (the key then has a TTL, never none) or refuse them as parameters
// its arithmetic cannot represent, with an error matching
// ErrInvalidArgument (and, for Set, ErrInvalidTTL too) and nothing
// changed; never another error, and never a wrapped deadline.
func runHugeTTLs(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	const huge = time.Duration(math.MaxInt64)
	f := newFixture(t)
	b := f.Backend
	u := f.unit()
	refused := func(name string, err error, ttlToo bool) bool {
		t.Helper()
		if err == nil {
			return false
		}
		want := "ErrInvalidArgument"
		if ttlToo {
			want += " and ErrInvalidTTL"
		}
		if !errors.Is(err, store.ErrInvalidArgument) || (ttlToo && !errors.Is(err, store.ErrInvalidTTL)) {
			t.Errorf("%s with a TTL of MaxInt64: got %v, want success or %s", name, err, want)
		}
		return true
	}
	for _, shape := range []struct {
		name string
		o    func(v uint64) store.SetOptions
	}{
		{"Set", func(uint64) store.SetOptions { return store.SetOptions{TTL: huge} }},
		{"Set IfAbsent", func(uint64) store.SetOptions { return store.SetOptions{TTL: huge, IfAbsent: true} }},
		{"Set IfVersion", func(v uint64) store.SetOptions { return store.SetOptions{TTL: huge, IfVersion: v} }},
	} {
		key := "{" + shape.name + "}"
		var v uint64
		if shape.name == "Set IfVersion" {
			v = mustSet(t, b, key, "old", store.SetOptions{TTL: 50 * u})
		}
		_, ok, err := b.Set(ctx, key, []byte("new"), shape.o(v))
		it, found, _ := b.Get(ctx, key)
		switch {
		case refused(shape.name, err, true):
			if v == 0 && found {
				t.Errorf("%s: a refused write created the key", shape.name)
			}
			if v != 0 && (!found || string(it.Value) != "old" || it.Version != v) {
				t.Errorf("%s: a refused write changed the key: got (%q, v%d, found %v), want (\"old\", v%d)", shape.name, it.Value, it.Version, found, v)
			}
		case !ok:
			t.Errorf("%s: got ok false, want the write to happen", shape.name)
		case !found || string(it.Value) != "new" || it.TTL <= 0:
			t.Errorf("%s: got (%q, ttl %v, found %v), want (\"new\", a positive TTL)", shape.name, it.Value, it.TTL, found)
		}
	}
	ld := &store.Lease{Op: store.LeaseAcquire, Key: "lease:{r}", FenceKey: "lease:{r}:fence", Holder: "A", TTL: 50 * u}
	decide(t, b.Lease, ld)
	for _, c := range []struct {
		name string
		key  string // a key the call must not create if it refuses
		run  func() error
	}{
		{"Lease acquire", "lease:{s}", func() error {
			return b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: "lease:{s}", FenceKey: "lease:{s}:fence", Holder: "B", TTL: huge})
		}},
		{"Lease renew", "", func() error {
			return b.Lease(ctx, &store.Lease{Op: store.LeaseRenew, Key: "lease:{r}", FenceKey: "lease:{r}:fence", Holder: "A", Token: ld.Current.Token, TTL: huge})
		}},
		{"Idempotency claim", "{idem}", func() error {
			return b.Idempotency(ctx, &store.Idempotency{Op: store.IdemClaim, Key: "{idem}", Fingerprint: []byte("fp"), Owner: "B", Lease: huge, Retention: huge})
		}},
		{"FixedWindow", "{fw}", func() error {
			return b.FixedWindow(ctx, &store.FixedWindow{Key: "{fw}", Limit: 5, Window: huge, Cost: 1})
		}},
		{"SlidingWindow", "{sw}", func() error {
			return b.SlidingWindow(ctx, &store.SlidingWindow{Key: "{sw}", Limit: 5, Window: huge, Cost: 1})
		}},
		{"TokenBucket", "{tb}", func() error {
			return b.TokenBucket(ctx, &store.TokenBucket{Key: "{tb}", Capacity: 1, Interval: huge, Cost: 1})
		}},
	} {
		if refused(c.name, c.run(), false) && c.key != "" {
			if _, found, _ := b.Get(ctx, c.key); found {
				t.Errorf("%s: a refused decision created %q", c.name, c.key)
			}
		}
	}
	in := &store.Lease{Op: store.LeaseInspect, Key: "lease:{r}", FenceKey: "lease:{r}:fence"}
	decide(t, b.Lease, in)
	if !in.OK || in.Current.Holder != "A" || in.Current.TTL <= 0 {
		t.Errorf("after a renew with a TTL of MaxInt64: got %+v, want A's lease with a positive TTL", in.Current)
	}
}
