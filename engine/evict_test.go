package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
)

// TestEvictionProperties runs random operations on a small capped engine
// under every policy and checks, after every operation: the cap holds;
// noeviction never evicts; volatile policies never evict a key without TTL;
// pinned keys are never evicted; due keys are reclaimed before a live key is
// evicted; every removal is reported exactly once, with its cause, for the
// version that was resident; reads never return a due key.
func TestEvictionProperties(t *testing.T) {
	for _, spec := range evict.Specs {
		t.Run(spec.Name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { evictionRun(t, spec) })
		})
	}
}

type shadowEntry struct {
	ver      uint64
	deadline int64
	pinned   bool
}

func evictionRun(t *rapid.T, spec evict.Spec) {
	clk := clock.NewManual(t0)
	shadow := map[string]shadowEntry{}
	var events []Removal
	shards := rapid.SampledFrom([]int{1, 2}).Draw(t, "shards")
	e, err := New(Config{Shards: shards, Clock: clk, ExpiryInterval: -1, Policy: spec,
		MaxBytes: int64(shards) * int64(rapid.IntRange(300, 1500).Draw(t, "shardCap")),
		OnRemove: func(r Removal) { events = append(events, r) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	keys := make([]string, 12)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	key := rapid.SampledFrom(keys)
	size := rapid.IntRange(0, 200)

	// settle applies the removal events of the last operation to the
	// shadow and checks them.
	settle := func(t *rapid.T, op string) {
		now := clk.Now()
		evicted := false
		for _, r := range events {
			se, ok := shadow[r.Key]
			if !ok || se.ver != r.Version {
				t.Fatalf("%s: removal %s of %q v%d, shadow has v%d present=%v", op, r.Cause, r.Key, r.Version, se.ver, ok)
			}
			switch r.Cause {
			case CauseEvicted:
				evicted = true
				if spec.New == nil {
					t.Fatalf("%s: noeviction evicted %q", op, r.Key)
				}
				if se.pinned {
					t.Fatalf("%s: pinned %q evicted", op, r.Key)
				}
				if spec.Volatile && se.deadline == 0 {
					t.Fatalf("%s: %s evicted %q, which has no TTL", op, spec.Name, r.Key)
				}
				if se.deadline != 0 && se.deadline <= now {
					t.Fatalf("%s: due key %q evicted instead of expired", op, r.Key)
				}
				delete(shadow, r.Key)
			case CauseExpired:
				if se.deadline == 0 || se.deadline > now {
					t.Fatalf("%s: %q expired with deadline %d at %d", op, r.Key, se.deadline, now)
				}
				delete(shadow, r.Key)
			case CauseDeleted:
				delete(shadow, r.Key)
			case CauseReplaced:
			}
		}
		events = events[:0]
		if evicted && shards == 1 {
			if due := e.Stats().Due; due != 0 {
				t.Fatalf("%s: evicted a live key while %d due keys stayed resident", op, due)
			}
		}
		if err := e.Check(); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	write := func(t *rapid.T, k string, v uint64, deadline int64, pin bool) {
		se := shadow[k]
		shadow[k] = shadowEntry{ver: v, deadline: deadline, pinned: se.pinned || pin}
	}

	t.Repeat(map[string]func(*rapid.T){
		"set": func(t *rapid.T) {
			k, n := key.Draw(t, "k"), size.Draw(t, "size")
			ttl := rapid.SampledFrom([]time.Duration{0, time.Second, time.Minute}).Draw(t, "ttl")
			pin := rapid.IntRange(0, 9).Draw(t, "pin") == 0
			before, existed := shadow[k]
			if existed && before.deadline != 0 && before.deadline <= clk.Now() {
				existed = false
			}
			v, ok, err := e.SetWith(k, make([]byte, n), SetOptions{TTL: ttl, Pin: pin})
			if err != nil {
				// The write failed: nothing may have been evicted.
				for _, r := range events {
					if r.Cause == CauseEvicted {
						t.Fatalf("failed write (%v) evicted %q", err, r.Key)
					}
				}
				settle(t, "set failed")
				if cur, ok := e.GetItem(k); existed && ok && cur.Version != before.ver {
					t.Fatalf("failed write changed %q", k)
				}
				settle(t, "get after failed set")
				return
			}
			if !ok {
				t.Fatal("unconditional set reported a failed condition")
			}
			// Removals happen before the write lands.
			settle(t, "set")
			d := int64(0)
			if ttl > 0 {
				d = clk.Now() + int64(ttl)
			}
			write(t, k, v, d, pin)
		},
		"get": func(t *rapid.T) {
			k := key.Draw(t, "k")
			it, ok := e.GetItem(k)
			settle(t, "get")
			se, in := shadow[k]
			if ok != in || (ok && it.Version != se.ver) {
				t.Fatalf("GetItem(%q) = v%d,%v; shadow v%d,%v", k, it.Version, ok, se.ver, in)
			}
			if ok && se.deadline != 0 && se.deadline <= clk.Now() {
				t.Fatalf("read returned due key %q", k)
			}
		},
		"delete": func(t *rapid.T) {
			e.Delete(key.Draw(t, "k"))
			settle(t, "delete")
		},
		"incr": func(t *rapid.T) {
			k := key.Draw(t, "k")
			_, err := e.IncrWith(k, 1, IncrOptions{TTL: time.Second, Pin: rapid.Bool().Draw(t, "pin")})
			settle(t, "incr")
			if err == nil {
				it, _ := e.GetItem(k)
				settle(t, "incr-get")
				se, existed := shadow[k]
				d := se.deadline
				if !existed {
					d = clk.Now() + int64(time.Second)
				}
				shadow[k] = shadowEntry{ver: it.Version, deadline: d, pinned: se.pinned || it.Pinned}
			}
		},
		"expire": func(t *rapid.T) {
			k := key.Draw(t, "k")
			ttl := rapid.SampledFrom([]time.Duration{0, time.Second, time.Hour}).Draw(t, "ttl")
			ok, _ := e.Expire(k, ttl, ExpireConditionAlways)
			settle(t, "expire")
			if ok && ttl > 0 {
				se := shadow[k]
				se.deadline = clk.Now() + int64(ttl)
				shadow[k] = se
			}
		},
		"persist": func(t *rapid.T) {
			k := key.Draw(t, "k")
			ok, _ := e.Persist(k)
			settle(t, "persist")
			if ok {
				se := shadow[k]
				se.deadline = 0
				shadow[k] = se
			}
		},
		"pin": func(t *rapid.T) {
			k := key.Draw(t, "k")
			p := rapid.Bool().Draw(t, "p")
			ok, _ := e.Pin(k, p)
			settle(t, "pin")
			if ok {
				se := shadow[k]
				se.pinned = p
				shadow[k] = se
			}
		},
		"advance": func(t *rapid.T) {
			clk.Advance(rapid.SampledFrom([]time.Duration{time.Millisecond, time.Second, time.Minute}).Draw(t, "d"))
		},
		"cycle": func(t *rapid.T) {
			e.RunExpiryCycle()
			settle(t, "cycle")
		},
		"": func(t *rapid.T) {
			if n := e.Len(); n != len(shadow) {
				t.Fatalf("engine holds %d entries, shadow %d", n, len(shadow))
			}
		},
	})
}

// TestHeapBoundedUnderCap fills a capped engine far past its cap with random
// sizes and checks that the live heap stays bounded.
func TestHeapBoundedUnderCap(t *testing.T) {
	if os.Getenv("TIDE_HEAP") == "" {
		t.Skip("heap measurement (fills 16 × the cap): opt-in with TIDE_HEAP=1")
	}
	if raceEnabled {
		t.Skip("measures the heap; the race detector inflates it and the time (CI runs it without -race)")
	}
	const maxBytes = 32 << 20
	e, err := New(Config{MaxBytes: maxBytes, Policy: evict.AllKeysLRU, ExpiryInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	written := 0
	var peak uint64
	for i := 0; written < 16*maxBytes; i++ {
		n := r.IntN(len(buf))
		if _, err := e.Set("key:"+strconv.Itoa(i), buf[:n]); err != nil {
			t.Fatal(err)
		}
		written += n
		if i%20000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
		}
	}
	st := e.Stats()
	if st.Bytes > maxBytes {
		t.Fatalf("accounted %d > cap %d", st.Bytes, maxBytes)
	}
	// Arenas hold at most 1.25× live bytes plus garbage that triggers a
	// rebuild at half: allow 2× the cap plus slack for slot arrays.
	if limit := uint64(2*maxBytes + 8<<20); peak > limit {
		t.Fatalf("heap grew by %d MiB, want ≤ %d MiB (cap %d MiB, wrote %d MiB)", peak>>20, limit>>20, maxBytes>>20, written>>20)
	}
	t.Logf("wrote %d MiB through a %d MiB cap: peak heap growth %d MiB, %d entries resident, %d evicted", written>>20, maxBytes>>20, peak>>20, st.Entries, st.Evicted)
}

func ExampleConfig_eviction() {
	e, _ := New(Config{Shards: 1, MaxBytes: 3 * (2 + 10 + EntryOverhead), Policy: evict.AllKeysLRU,
		OnRemove: func(r Removal) { fmt.Println(r.Key, r.Cause) }})
	defer e.Close()
	for _, k := range []string{"k1", "k2", "k3"} {
		e.SetTTL(k, make([]byte, 10), time.Hour)
	}
	e.Get("k1")                   // k2 is now the least recently used
	e.Set("k4", make([]byte, 10)) // needs room: evicts k2 (its TTL had not run out)
	// Output: k2 evicted
}

// TestDeadlinePolicySeesTTLChanges guards the promise that a policy ordering
// by deadline (volatile-ttl) evicts by each key's current deadline: a change
// of only the TTL (Expire, ExpireAt, GetAndExpire) must reach it. Key a
// moves from +1h to +10h, past b (+2h); the next write that needs room must
// evict b, not a.
func TestDeadlinePolicySeesTTLChanges(t *testing.T) {
	moves := []struct {
		name string
		move func(e *Engine) error
	}{
		{"Expire", func(e *Engine) error { _, err := e.Expire("a", 10*time.Hour, ExpireConditionAlways); return err }},
		{"ExpireConditionGT", func(e *Engine) error { _, err := e.Expire("a", 10*time.Hour, ExpireConditionGT); return err }},
		{"ExpireAt", func(e *Engine) error {
			_, err := e.ExpireAt("a", t0.Add(10*time.Hour), ExpireConditionAlways)
			return err
		}},
		{"GetAndExpire", func(e *Engine) error { _, _, err := e.GetAndExpire("a", 10*time.Hour); return err }},
	}
	for _, tc := range moves {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 1, MaxBytes: 2 * (1 + 1 + EntryOverhead), Policy: evict.VolatileTTL})
			if _, err := e.SetTTL("a", []byte("1"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := e.SetTTL("b", []byte("2"), 2*time.Hour); err != nil {
				t.Fatal(err)
			}
			if err := tc.move(e); err != nil {
				t.Fatal(err)
			}
			if _, err := e.SetTTL("c", []byte("3"), 3*time.Hour); err != nil {
				t.Fatal(err)
			}
			_, aok := e.Get("a")
			_, bok := e.Get("b")
			if !aok || bok {
				t.Fatalf("after moving a to +10h, writing c evicted a=%v b=%v; want b (nearest deadline, +2h) evicted", !aok, !bok)
			}
			mustCheck(t, e)
		})
	}
}

// TestCommitCountsItsOwnFrees guards the promise that a commit accounts for
// its net change: with the cap exactly full, a commit whose deletes and
// shrinks free as much as its writes need fits without evicting anything
// (noeviction must not refuse it; an evicting policy must not evict an
// unrelated key).
func TestCommitCountsItsOwnFrees(t *testing.T) {
	v := func(n int) []byte { return make([]byte, n) }
	shapes := []struct {
		name string
		ops  []Op
		gone []string // keys the commit deletes
	}{
		{"rename k1 to k3", []Op{{Key: "k1", Delete: true}, {Key: "k3", Value: v(10), TTL: NoTTL}}, []string{"k1"}},
		{"write k3 before deleting k1", []Op{{Key: "k3", Value: v(10), TTL: NoTTL}, {Key: "k1", Delete: true}}, []string{"k1"}},
		{"grow k2 before shrinking k1", []Op{{Key: "k2", Value: v(15), TTL: NoTTL}, {Key: "k1", Value: v(5), TTL: NoTTL}}, nil},
	}
	for _, pol := range []evict.Spec{evict.NoEviction, evict.AllKeysLRU} {
		for _, tc := range shapes {
			t.Run(pol.Name+"/"+tc.name, func(t *testing.T) {
				// Room for exactly two entries of key 2 bytes + value 10.
				e, _ := newTest(t, Config{Shards: 1, MaxBytes: 2 * (2 + 10 + EntryOverhead), Policy: pol})
				for _, k := range []string{"k1", "k2"} {
					if _, err := e.Set(k, v(10)); err != nil {
						t.Fatal(err)
					}
				}
				if _, ok, err := e.Commit(nil, tc.ops); err != nil || !ok {
					t.Fatalf("Commit = %v, %v; want committed (it frees what it needs)", ok, err)
				}
				if _, ok := e.Get("k2"); !ok {
					t.Fatal("k2 was evicted")
				}
				if st := e.Stats(); st.Evicted != 0 || st.Bytes > st.MaxBytes {
					t.Fatalf("Evicted = %d, Bytes = %d of %d; want nothing evicted, cap held", st.Evicted, st.Bytes, st.MaxBytes)
				}
				for _, k := range tc.gone {
					if _, ok := e.Get(k); ok {
						t.Fatalf("%s survived its delete", k)
					}
				}
				mustCheck(t, e)
			})
		}
	}
}
