package engine

import (
	"errors"
	"fmt"
	"strconv"
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
