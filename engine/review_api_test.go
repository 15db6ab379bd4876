package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
)

// Adversarial review of the public API (review-api).

// TestReviewAPIClockBeforeEpoch: a manual clock that reads before 1970
// (time.Time{} does) must not freeze the engine's time: a key written
// with TTL d is gone d later. Refusing such a clock at New
// (ErrInvalidConfig) keeps the promise too; a clock at the epoch
// (clock.Manual's zero value) must be accepted.
func TestReviewAPIClockBeforeEpoch(t *testing.T) {
	for _, start := range []time.Time{{}, time.Unix(-100, 0), time.Unix(0, -1), time.Unix(0, 0)} {
		t.Run(fmt.Sprint(start.UnixNano()), func(t *testing.T) {
			clk := clock.NewManual(start)
			e, err := New(Config{Clock: clk, ExpiryInterval: -1})
			if err != nil {
				if !errors.Is(err, ErrInvalidConfig) || start.UnixNano() >= 0 {
					t.Fatalf("New: err = %v, want nil or ErrInvalidConfig", err)
				}
				return
			}
			defer e.Close()
			if _, err := e.SetTTL("k", []byte("v"), time.Second); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Second)
			if _, ok := e.Get("k"); ok {
				t.Fatalf("Get 2s after a write with TTL 1s: got a hit, want a miss")
			}
			if d, ok := e.TTL("k"); ok {
				t.Fatalf("TTL 2s after a write with TTL 1s: got %v, want a miss", d)
			}
		})
	}
}

// TestReviewAPIOpsInsideClose: an operation that passed the engine's
// closed gate before Close began and reaches its shard after Close
// cleared it must report ErrClosed, as SetWith and Incr do, not a miss
// (false, nil) that says the key does not exist. The test opens the gate
// again after Close to run the operations in that window.
func TestReviewAPIOpsInsideClose(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		if _, err := e.SetTTL(k, []byte("1"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	e.closed.Store(false) // an operation already past the gate
	defer e.closed.Store(true)
	ops := []struct {
		name string
		do   func() error
	}{
		{"SetWith", func() error { _, _, err := e.SetWith("a", []byte("x"), SetOptions{TTL: NoTTL}); return err }},
		{"Incr", func() error { _, err := e.Incr("b"); return err }},
		{"Commit", func() error { _, _, err := e.Commit(nil, []Op{{Key: "c", Delete: true}}); return err }},
		{"Expire", func() error { _, err := e.Expire("a", time.Minute, ExpireConditionAlways); return err }},
		{"ExpireAt", func() error { _, err := e.ExpireAt("b", t0.Add(time.Minute), ExpireConditionAlways); return err }},
		{"Persist", func() error { _, err := e.Persist("c"); return err }},
		{"Pin", func() error { _, err := e.Pin("d", true); return err }},
		{"GetAndExpire", func() error { _, _, err := e.GetAndExpire("e", time.Minute); return err }},
		{"DeleteWith", func() error { _, _, err := e.DeleteWith("f", DeleteOptions{}); return err }},
	}
	for _, op := range ops {
		if err := op.do(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a shard Close has cleared: err = %v, want ErrClosed", op.name, err)
		}
	}
}

// TestReviewAPIItemsYieldsAKeyOnce: a key deleted and written again while
// Items runs (it may land in a slot the iteration has not reached) must not
// be yielded twice: All and Items are "like sync.Map's Range", which
// visits no key more than once.
func TestReviewAPIItemsYieldsAKeyOnce(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	const n = 300 // more than one batch of Items
	for i := range n {
		if _, err := e.Set("k"+strconv.Itoa(i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	first := ""
	for k := range e.Items() {
		seen[k]++
		if first == "" {
			first = k
			e.Delete(k)
			e.Delete("k" + strconv.Itoa(n-1))
			if _, err := e.Set(k, []byte("again")); err != nil {
				t.Fatal(err)
			}
			// Overwritten, not re-created: still yielded once.
			if _, err := e.Set("k"+strconv.Itoa(n-20), []byte("new")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k, c := range seen {
		if c > 1 {
			t.Errorf("Items yielded %q %d times, want at most once", k, c)
		}
	}
	for i := 1; i < n-1; i++ { // present throughout the iteration
		if k := "k" + strconv.Itoa(i); seen[k] != 1 {
			t.Errorf("Items yielded %q %d times, want once", k, seen[k])
		}
	}
}

// TestReviewAPICommitPreconditionNotEvicted: a Commit whose precondition
// holds must not evict the precondition's key to make room for its writes
// (in its own shards or in a visit to others): when the writes appear the
// precondition must still hold. The key stays evictable afterwards.
func TestReviewAPICommitPreconditionNotEvicted(t *testing.T) {
	const val = 100
	size := int64(4 + val + EntryOverhead)
	for _, tc := range []struct {
		name           string
		pShard, wShard int // shards of the precondition's key and of the written key
		qShard         int // shard of the other resident key, the one to evict
	}{
		{"one shard", 0, 0, 0},
		{"written elsewhere", 0, 1, 0},
		{"victim elsewhere", 0, 0, 1},
		{"all apart", 0, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var evs []Removal
			e, _ := newTest(t, Config{Shards: 2, MaxBytes: 2 * size, Policy: evict.AllKeysLRU,
				OnRemove: func(r Removal) { evs = append(evs, r) }})
			key := func(prefix string, shard int) string {
				for i := 0; ; i++ {
					if k := fmt.Sprintf("%s%03d", prefix, i); e.ShardIndex(k) == shard {
						return k
					}
				}
			}
			p, q, w := key("p", tc.pShard), key("q", tc.qShard), key("w", tc.wShard)
			vp, err := e.Set(p, make([]byte, val))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Set(q, make([]byte, val)); err != nil {
				t.Fatal(err)
			}
			e.Get(q) // p is the LRU victim of its shard
			_, ok, err := e.Commit([]Precondition{{Key: p, Version: vp}}, []Op{{Key: w, Value: make([]byte, val), TTL: NoTTL, Pin: true}})
			if err != nil || !ok {
				t.Fatalf("Commit = %v %v, want committed (by evicting %s)", ok, err, q)
			}
			if it, ok := e.GetItem(p); !ok || it.Version != vp {
				t.Fatalf("after a Commit that required %s at version %d: got version %d, found %v, want it at that version (removals %v)", p, vp, it.Version, ok, causes(evs))
			}
			mustCheck(t, e)
			// p is evictable again: with w pinned, it is the only victim.
			if _, err := e.Set(q, make([]byte, val)); err != nil {
				t.Fatalf("a write that needs p's room: %v, want p evicted", err)
			}
			if _, ok := e.Get(p); ok {
				t.Fatalf("%s still resident after a write that needed its room", p)
			}
		})
	}
}

// causes lists removals as key:cause.
func causes(evs []Removal) []string {
	var out []string
	for _, r := range evs {
		out = append(out, r.Key+":"+r.Cause.String())
	}
	return out
}

// TestReviewAPICommitRequiresWhatItWrites: a Commit whose precondition
// names a key it also writes (or names a key twice), and that must make
// room in another shard, keeps the policy's accounting exact (Check).
func TestReviewAPICommitRequiresWhatItWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		pre  func(p string, v uint64) []Precondition
		ops  func(p, w string) []Op
	}{
		{"required and written", func(p string, v uint64) []Precondition { return []Precondition{{Key: p, Version: v}} },
			func(p, w string) []Op { return []Op{{Key: p, Value: make([]byte, 150), TTL: NoTTL}} }},
		{"required twice", func(p string, v uint64) []Precondition {
			return []Precondition{{Key: p, Version: v}, {Key: p, Version: v}}
		}, func(p, w string) []Op { return []Op{{Key: w, Value: make([]byte, 100), TTL: NoTTL}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 2, MaxBytes: 2 * (4 + 100 + EntryOverhead), Policy: evict.AllKeysLRU})
			key := func(prefix string, shard int) string {
				for i := 0; ; i++ {
					if k := fmt.Sprintf("%s%03d", prefix, i); e.ShardIndex(k) == shard {
						return k
					}
				}
			}
			// An engine's first visit starts at shard 1: the
			// required key's shard, which must not be its own victim.
			p, q, w := key("p", 1), key("q", 0), key("w", 1)
			vp, err := e.Set(p, make([]byte, 100))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Set(q, make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := e.Commit(tc.pre(p, vp), tc.ops(p, w)); !ok || err != nil {
				t.Fatalf("Commit = %v %v, want committed (by evicting %s)", ok, err, q)
			}
			mustCheck(t, e)
		})
	}
}

// TestReviewAPICounterLimits: counters at the ends of int64 overflow with
// ErrOverflow and leave the value unchanged; an expired counter starts
// again from 0 (its old value never comes back).
func TestReviewAPICounterLimits(t *testing.T) {
	e, clk := newTest(t, Config{Shards: 1})
	steps := []struct {
		name    string
		do      func() (int64, error)
		want    int64
		wantErr error
		value   string // the stored value after the step
	}{
		{"IncrBy MaxInt64 creates", func() (int64, error) { return e.IncrBy("c", math.MaxInt64) }, math.MaxInt64, nil, "9223372036854775807"},
		{"Incr at MaxInt64", func() (int64, error) { return e.Incr("c") }, 0, ErrOverflow, "9223372036854775807"},
		{"DecrBy MinInt64", func() (int64, error) { return e.DecrBy("c", math.MinInt64) }, 0, ErrOverflow, "9223372036854775807"},
		{"IncrBy MinInt64 to -1", func() (int64, error) { return e.IncrBy("c", math.MinInt64) }, -1, nil, "-1"},
		{"IncrBy MinInt64 at -1", func() (int64, error) { return e.IncrBy("c", math.MinInt64) }, 0, ErrOverflow, "-1"},
		{"IncrBy MinInt64+1 to MinInt64", func() (int64, error) { return e.IncrBy("c", math.MinInt64+1) }, math.MinInt64, nil, "-9223372036854775808"},
		{"Decr at MinInt64", func() (int64, error) { return e.Decr("c") }, 0, ErrOverflow, "-9223372036854775808"},
		{"IncrBy 0 at MinInt64", func() (int64, error) { return e.IncrBy("c", 0) }, math.MinInt64, nil, "-9223372036854775808"},
		{"IncrWith TTL 1ns on an existing key keeps no TTL", func() (int64, error) { return e.IncrWith("c", 1, IncrOptions{TTL: 1}) }, math.MinInt64 + 1, nil, "-9223372036854775807"},
	}
	for _, st := range steps {
		got, err := st.do()
		if !errors.Is(err, st.wantErr) || (err == nil && got != st.want) {
			t.Fatalf("%s: got %d, %v; want %d, %v", st.name, got, err, st.want, st.wantErr)
		}
		if v, _ := e.Get("c"); string(v) != st.value {
			t.Fatalf("%s: value %q, want %q", st.name, v, st.value)
		}
	}
	if d, ok := e.TTL("c"); !ok || d != NoTTL {
		t.Fatalf("TTL = %v %v, want NoTTL", d, ok)
	}
	// A counter created with TTL 1 ns is gone 1 ns later, and counts
	// from 0 again.
	if n, err := e.IncrWith("w", 5, IncrOptions{TTL: 1}); err != nil || n != 5 {
		t.Fatalf("IncrWith TTL 1ns = %d %v", n, err)
	}
	clk.Advance(1)
	if n, err := e.IncrWith("w", 1, IncrOptions{TTL: time.Hour}); err != nil || n != 1 {
		t.Fatalf("Incr after the window: got %d %v, want 1 (the expired value must not come back)", n, err)
	}
	for _, v := range []string{"", "-", "-0", "+1", " 1", "01", "9223372036854775808", "-9223372036854775809", "1e3"} {
		if _, err := e.Set("bad", []byte(v)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Incr("bad"); !errors.Is(err, ErrNotInteger) {
			t.Errorf("Incr of %q: err = %v, want ErrNotInteger", v, err)
		}
		if got, _ := e.Get("bad"); string(got) != v {
			t.Errorf("Incr of %q changed it to %q", v, got)
		}
	}
}

// TestReviewAPIKeySizeBoundary: a key of MaxKeySize bytes is a key like
// any other; one byte more is ErrKeyTooLarge on every call with an error
// result and a miss on every read, and changes nothing.
func TestReviewAPIKeySizeBoundary(t *testing.T) {
	const max = 16
	e, _ := newTest(t, Config{Shards: 1, MaxKeySize: max})
	ok := strings.Repeat("k", max)
	long := ok + "k"
	if _, err := e.Set(ok, []byte("v")); err != nil {
		t.Fatalf("Set of a %d-byte key: %v", max, err)
	}
	if _, err := e.Set("", nil); err != nil {
		t.Fatalf("Set of the empty key: %v", err)
	}
	calls := map[string]func() error{
		"Set":          func() error { _, err := e.Set(long, nil); return err },
		"SetWith":      func() error { _, _, err := e.SetWith(long, nil, SetOptions{TTL: NoTTL}); return err },
		"CAS":          func() error { _, _, err := e.CompareAndSwap(long, 1, nil); return err },
		"CAS absent":   func() error { _, _, err := e.CompareAndSwap(long, MustBeAbsent, nil); return err },
		"Incr":         func() error { _, err := e.Incr(long); return err },
		"Commit op":    func() error { _, _, err := e.Commit(nil, []Op{{Key: long, Delete: true}}); return err },
		"Commit pre":   func() error { _, _, err := e.Commit([]Precondition{{Key: long}}, nil); return err },
		"Expire":       func() error { _, err := e.Expire(long, time.Second, ExpireConditionAlways); return err },
		"ExpireAt":     func() error { _, err := e.ExpireAt(long, t0, ExpireConditionAlways); return err },
		"GetAndExpire": func() error { _, _, err := e.GetAndExpire(long, time.Second); return err },
		"Persist":      func() error { _, err := e.Persist(long); return err },
		"Pin":          func() error { _, err := e.Pin(long, true); return err },
		"DeleteWith":   func() error { _, _, err := e.DeleteWith(long, DeleteOptions{}); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrKeyTooLarge) {
			t.Errorf("%s with a %d-byte key: err = %v, want ErrKeyTooLarge", name, max+1, err)
		}
	}
	if _, found := e.Get(long); found {
		t.Error("Get of an over-long key: a hit")
	}
	if e.Delete(long) || e.CompareAndDelete(long, 1) {
		t.Error("Delete of an over-long key reported a delete")
	}
	if got := e.Len(); got != 2 {
		t.Errorf("Len = %d, want 2", got)
	}
}

// TestReviewAPIListenerReentersCommit: a listener that writes the keys a
// Commit just replaced or deleted, from inside the delivery, neither
// deadlocks nor sees the engine locked; the removals carry the old values.
func TestReviewAPIListenerReentersCommit(t *testing.T) {
	var e *Engine
	var got []string
	e, _ = newTest(t, Config{Shards: 4, OnRemove: func(r Removal) {
		got = append(got, r.Key+":"+r.Cause.String()+":"+string(r.Value))
		if r.Key != "log" {
			if _, _, err := e.Commit(nil, []Op{{Key: "log", Value: []byte(r.Key), TTL: NoTTL}}); err != nil {
				panic(err)
			}
		}
	}})
	e.Set("a", []byte("a1"))
	e.Set("b", []byte("b1"))
	if _, ok, err := e.Commit(nil, []Op{{Key: "a", Value: []byte("a2"), TTL: NoTTL}, {Key: "b", Delete: true}}); !ok || err != nil {
		t.Fatalf("Commit = %v %v", ok, err)
	}
	slices.Sort(got)
	want := []string{"a:replaced:a1", "b:deleted:b1", "log:replaced:a"}
	if !slices.Equal(got, want) && !slices.Equal(got, []string{"a:replaced:a1", "b:deleted:b1", "log:replaced:b"}) {
		t.Errorf("removals %q, want %q (or with log:replaced:b)", got, want)
	}
	mustCheck(t, e)
}

// TestReviewAPIBigValueUnderCap: under MaxBytes with several shards, a
// value larger than a shard's share of the cap is stored by evicting in
// other shards, never passing the cap; when every other entry is pinned it
// is ErrOutOfMemory, and nothing is removed.
func TestReviewAPIBigValueUnderCap(t *testing.T) {
	const maxBytes = 64 << 10
	for _, pin := range []bool{false, true} {
		t.Run(fmt.Sprint("pinned=", pin), func(t *testing.T) {
			var evs []Removal
			e, _ := newTest(t, Config{Shards: 8, MaxBytes: maxBytes, Policy: evict.AllKeysLRU,
				OnRemove: func(r Removal) { evs = append(evs, r) }})
			for i := 0; ; i++ {
				_, _, err := e.SetWith("k"+strconv.Itoa(i), make([]byte, 100), SetOptions{TTL: NoTTL, Pin: pin})
				if errors.Is(err, ErrOutOfMemory) || e.Stats().Evicted > 0 {
					break // full
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			evs = nil
			before := e.Len()
			big := make([]byte, maxBytes/2) // four shards' shares
			_, err := e.Set("big", big)
			switch {
			case pin && !errors.Is(err, ErrOutOfMemory):
				t.Fatalf("Set of %d bytes with everything pinned: err = %v, want ErrOutOfMemory", len(big), err)
			case pin && (len(evs) != 0 || e.Len() != before):
				t.Fatalf("a failed Set removed %d entries (%d → %d resident)", len(evs), before, e.Len())
			case !pin && err != nil:
				t.Fatalf("Set of %d bytes: %v, want it stored by eviction", len(big), err)
			}
			if st := e.Stats(); st.Bytes > maxBytes {
				t.Fatalf("Bytes = %d over MaxBytes %d", st.Bytes, maxBytes)
			}
			mustCheck(t, e)
		})
	}
}

// TestReviewAPICommitsRaceUnderCap: commits with preconditions, plain
// writes and pins race under a small cap with eviction; every error is
// ErrOutOfMemory, the cap holds, and the engine's invariants hold after.
func TestReviewAPICommitsRaceUnderCap(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 4, MaxBytes: 8 << 10, Policy: evict.AllKeysLRU, OnRemove: func(Removal) {}})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 2000 {
				k := func() string { return "k" + strconv.Itoa(r.IntN(40)) }
				var err error
				switch r.IntN(4) {
				case 0:
					_, err = e.Set(k(), make([]byte, r.IntN(400)))
				case 1:
					p := k()
					it, _ := e.GetItem(p)
					_, _, err = e.Commit([]Precondition{{Key: p, Version: it.Version}},
						[]Op{{Key: k() + "x", Value: make([]byte, r.IntN(400)), TTL: NoTTL}, {Key: k() + "y", Delete: true}})
				case 2:
					_, err = e.Pin(k(), r.IntN(2) == 0)
				case 3:
					_, _, err = e.Commit(nil, []Op{{Key: k(), Value: make([]byte, r.IntN(400)), TTL: time.Hour, Pin: r.IntN(8) == 0}})
				}
				if err != nil && !errors.Is(err, ErrOutOfMemory) {
					errs <- err
					return
				}
				if st := e.Stats(); st.Bytes > st.MaxBytes {
					errs <- fmt.Errorf("Bytes %d over MaxBytes %d", st.Bytes, st.MaxBytes)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustCheck(t, e)
}
