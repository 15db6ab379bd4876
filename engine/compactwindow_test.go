package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

// windowObs is what a lock-free read finds of one key.
type windowObs struct {
	found    bool
	value    string
	version  uint64
	deadline int64
	pinned   bool
}

// observeLockFree reads keys the way Get/GetItem do, without the lock; a
// due key reads as missing. ok is false if a read did not validate.
func observeLockFree(e *Engine, s *shard, keys []string) (map[string]windowObs, bool) {
	st := make(map[string]windowObs, len(keys))
	for _, k := range keys {
		_, h := e.shardFor(k)
		var pk peeked
		e.peek(s, k, h, false, &pk)
		switch {
		case pk.r == peekRetry && s.pub.Load() == nil: // nothing published yet
			st[k] = windowObs{}
		case pk.r == peekMiss, pk.r == peekDue:
			st[k] = windowObs{}
		case pk.r == peekHit:
			v := loadValue(nil, pk.arena, pk.val, pk.vlen)
			o := windowObs{true, string(v), atomic.LoadUint64(hdr64(pk.arena, pk.off+hdrVersion)), pk.deadline, pk.kw>>24&flagPinned != 0}
			if !pk.valid(s) {
				return nil, false
			}
			st[k] = o
		default:
			return nil, false
		}
	}
	return st, true
}

func sameState(a, b map[string]windowObs) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// A reader that reads the shard while a writer compacts the arena or grows
// the table (the window in which the shard is open to lock-free readers)
// sees, across every key, the whole state before the writer's operation or
// the whole state after it: never a write half made, a key missing that was
// there before and after, or a mix of a Commit's ops. Every kind of write
// runs against one small shard, so most of them compact or grow.
func TestCompactionWindowShowsOnlyBeforeOrAfter(t *testing.T) {
	e, clk := newTest(t, Config{Shards: 1})
	s := &e.shards[0]
	rng := rand.New(rand.NewPCG(1, 2))
	const nk = 24
	fixed := make([]string, 0, nk+4)
	for i := range nk {
		fixed = append(fixed, fmt.Sprintf("k%02d", i))
	}
	counters := []string{"c0", "c1", "c2", "c3"}
	fixed = append(fixed, counters...)
	val := func() []byte { return []byte(strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(120))) }
	key := func() string { return fixed[rng.IntN(nk)] }
	fresh := 0
	filler := ""

	var universe []string
	var cur []map[string]windowObs
	inOp := false
	setCompactingHook(t, func(hs *shard) {
		if !inOp {
			return
		}
		st, ok := observeLockFree(e, hs, universe)
		if !ok {
			t.Errorf("a read in the compaction window did not validate")
			return
		}
		cur = append(cur, st)
	})

	opened := 0
	byOp := map[string]int{}
	for step := range 3000 {
		if rng.IntN(50) == 0 {
			clk.Advance(time.Duration(rng.IntN(3)+1) * time.Second)
		}
		var name string
		var op func()
		keys := []string{}
		switch c := rng.IntN(14); c {
		case 0, 1, 2:
			k, v := key(), val()
			name, keys, op = "Set", []string{k}, func() { e.Set(k, v) }
		case 3:
			k, v := key(), val()
			name, keys, op = "SetTTL", []string{k}, func() { e.SetTTL(k, v, time.Duration(rng.IntN(4)+1)*time.Second) }
		case 4:
			k, v := key(), val()
			name, keys, op = "SetWith KeepTTL", []string{k}, func() { e.SetWith(k, v, SetOptions{KeepTTL: true}) }
		case 5:
			k, v := key(), val()
			name, keys, op = "CompareAndSwap", []string{k}, func() {
				if it, ok := e.GetItem(k); ok {
					e.CompareAndSwap(k, it.Version, v)
				}
			}
		case 6:
			k := counters[rng.IntN(len(counters))]
			name, keys, op = "IncrWith", []string{k}, func() {
				e.IncrWith(k, rng.Int64N(1<<40), IncrOptions{TTL: time.Duration(rng.IntN(3)+1) * time.Second})
			}
		case 7:
			fresh++
			k, v := fmt.Sprintf("new%d", fresh), val()
			name, keys, op = "Set new key", []string{k}, func() { e.SetWith(k, v, SetOptions{TTL: NoTTL, Pin: rng.IntN(2) == 0}) }
		case 8:
			k := key()
			name, keys, op = "GetAndExpire/Expire/Persist/Pin", []string{k}, func() {
				switch rng.IntN(4) {
				case 0:
					e.GetAndExpire(k, time.Second)
				case 1:
					e.Expire(k, time.Duration(rng.IntN(3))*time.Second-time.Second/2, ExpireConditionAlways)
				case 2:
					e.Persist(k)
				case 3:
					e.Pin(k, rng.IntN(2) == 0)
				}
			}
		case 9:
			k := key()
			name, keys, op = "Delete", []string{k}, func() { e.Delete(k) }
		case 10:
			a, b := key(), key()
			va, vb := val(), []byte(strings.Repeat("Z", 200+rng.IntN(200)))
			name, keys, op = "Commit", []string{a, b}, func() {
				e.Commit(nil, []Op{{Key: a, Value: va, TTL: NoTTL}, {Key: b, Value: vb, TTL: NoTTL}})
			}
		case 11:
			if step%20 != 0 {
				continue // a Restore writes every entry: keep them few
			}
			var buf bytes.Buffer
			if _, err := e.Snapshot(&buf); err != nil {
				t.Fatal(err)
			}
			for _, k := range fixed[:4] {
				e.Set(k, val())
			}
			name, op = "Restore", func() { e.Restore(bytes.NewReader(buf.Bytes())) }
		case 12:
			name, op = "RunExpiryCycle", func() { e.RunExpiryCycle() }
		case 13:
			k, v := key(), val()
			name, keys, op = "SetWith IfPresent TTLOnCreate", []string{k}, func() {
				e.SetWith(k, v, SetOptions{Only: ConditionIfPresent, TTL: time.Second, TTLOnCreate: true})
			}
		}
		// Leave the arena no room, so that the op's allocation (if
		// any) compacts: the filler record takes what is left.
		e.Delete(filler)
		filler = fmt.Sprintf("f%05d", step)
		if room := cap(s.arena) - len(s.arena); room >= recSize(len(filler), 0, 0) {
			e.Set(filler, make([]byte, room-recSize(len(filler), 0, 0)))
		}
		universe = append(append(universe[:0], fixed...), keys...)
		before, ok := observeLockFree(e, s, universe)
		if !ok {
			t.Fatal("a read with no writer did not validate")
		}
		cur, inOp = nil, true
		op()
		inOp = false
		after, ok := observeLockFree(e, s, universe)
		if !ok {
			t.Fatal("a read with no writer did not validate")
		}
		opened += len(cur)
		byOp[name] += len(cur)
		// Restore stores entry by entry, each under its own lock: only
		// each key is before or after.
		perKey := name == "Restore"
		for _, st := range cur {
			if perKey {
				for _, k := range universe {
					if st[k] != before[k] && st[k] != after[k] {
						t.Fatalf("step %d %s: %s in the window %+v; before %+v, after %+v", step, name, k, st[k], before[k], after[k])
					}
				}
				continue
			}
			if !sameState(st, before) && !sameState(st, after) {
				for _, k := range universe {
					if st[k] != before[k] || st[k] != after[k] {
						t.Errorf("step %d %s: %s in the window %+v; before %+v, after %+v", step, name, k, st[k], before[k], after[k])
					}
				}
				t.Fatalf("step %d %s: a reader in the compaction window saw a state that was neither before nor after", step, name)
			}
		}
	}
	if opened < 50 {
		t.Fatalf("only %d compaction windows opened during operations: the test exercises little", opened)
	}
	t.Logf("%d windows checked: %v", opened, byOp)
	mustCheck(t, e)
}

// A View's fn reads the same bytes for its whole run while a writer keeps
// overwriting the key (in place when it can), compacting the arena and
// growing the table: a View validated inside a compaction window, whose
// mark lands on the arena being replaced, is not overwritten under it.
func TestViewBytesStableAcrossCompactionWindows(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	const nk = 8
	for i := range nk {
		e.Set(fmt.Sprintf("v%d", i), bytes.Repeat([]byte{byte('a' + i)}, 64))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var views, torn atomic.Int64
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := fmt.Sprintf("v%d", (i+g)%nk)
				e.View(k, func(v []byte) {
					c := append([]byte(nil), v...)
					for range 3 {
						runtime.Gosched()
					}
					if !bytes.Equal(c, v) {
						torn.Add(1)
					}
					for _, b := range c {
						if b != c[0] {
							torn.Add(1)
							break
						}
					}
					views.Add(1)
				})
			}
		}()
	}
	for i := range 30000 {
		k := fmt.Sprintf("v%d", i%nk)
		b := byte('A' + i%26)
		e.Set(k, bytes.Repeat([]byte{b}, 64)) // same length: in place unless viewed
		if i%3 == 0 {
			e.Set(fmt.Sprintf("g%d", i), []byte("grow")) // arena and table grow
		}
		if i%500 == 0 {
			for j := i - 500; j < i; j += 3 {
				e.Delete(fmt.Sprintf("g%d", j))
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() != 0 {
		t.Fatalf("%d of %d Views saw their value change or tear under fn", torn.Load(), views.Load())
	}
	if views.Load() == 0 {
		t.Fatal("no View ran")
	}
	mustCheck(t, e)
}

// Concurrent lock-free readers of keys that are always present, while one
// writer rewrites them (in place or appended, with or without a TTL) with
// the arena kept full so that writes compact, and the clock moves: every
// read finds the key, and GetItem's value, TTL and version come from one
// state — the value says whether the write gave a TTL ('T', of at most
// maxTTL) or not ('N'), and is one byte repeated (not torn).
func TestLockFreeReadsSeeWholeWritesAcrossCompactions(t *testing.T) {
	e, clk := newTest(t, Config{Shards: 1})
	s := &e.shards[0]
	const nk = 6
	const maxTTL = time.Hour
	keys := make([]string, nk)
	for i := range keys {
		keys[i] = fmt.Sprintf("s%d", i)
		e.Set(keys[i], []byte("NNNN"))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan string, 16)
	report := func(f string, a ...any) {
		select {
		case errs <- fmt.Sprintf(f, a...):
		default:
		}
	}
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := keys[(i+g)%nk]
				if i%2 == 0 {
					it, ok := e.GetItem(k)
					if !ok {
						report("GetItem(%s) missed a key that is always present", k)
						continue
					}
					v := it.Value
					if len(v) == 0 || bytes.Count(v, v[:1]) != len(v) {
						report("GetItem(%s) = torn value %q", k, v)
						continue
					}
					switch {
					case v[0] == 'N' && it.TTL != NoTTL, v[0] == 'T' && (it.TTL <= 0 || it.TTL > maxTTL):
						report("GetItem(%s): value %q with TTL %v (from different states)", k, v[:1], it.TTL)
					}
				} else {
					ttl, ok := e.TTL(k)
					if !ok || ttl == 0 || ttl > maxTTL || (ttl < 0 && ttl != NoTTL) {
						report("TTL(%s) = %v, %v", k, ttl, ok)
					}
				}
				reads.Add(1)
			}
		}()
	}
	filler := ""
	rng := rand.New(rand.NewPCG(3, 4))
	for reads.Load() == 0 { // the readers are at work before the writes start
		runtime.Gosched()
	}
	writes := 300 // each forces a compaction: quadratic in the arena, so kept short
	if os.Getenv("TIDE_SOAK") != "" {
		writes = 2000
	}
	for i := range writes {
		e.Delete(filler)
		filler = fmt.Sprintf("f%05d", i)
		if room := cap(s.arena) - len(s.arena); room >= recSize(len(filler), 0, 0) {
			e.Set(filler, make([]byte, room-recSize(len(filler), 0, 0)))
		}
		k := keys[rng.IntN(nk)]
		n := 1 + rng.IntN(100)
		if rng.IntN(2) == 0 {
			e.SetTTL(k, bytes.Repeat([]byte{'T'}, n), maxTTL)
		} else {
			e.Set(k, bytes.Repeat([]byte{'N'}, n))
		}
		if i%16 == 0 {
			clk.Advance(time.Second) // never past a key's hour
		}
		if i%7 == 0 {
			e.Set(fmt.Sprintf("g%d", i), nil) // the table grows
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for m := range errs {
		t.Error(m)
	}
	if reads.Load() == 0 {
		t.Fatal("no read ran")
	}
	mustCheck(t, e)
}

// Readers whose read-log stripes fill drain them into the policy
// (TryLock) while a writer evicts under MaxBytes, an eviction listener
// reads the engine back, and the engine closes under them: no deadlock,
// no race, no panic, and reads after Close miss.
func TestReadLogDrainRacesEvictionsListenersAndClose(t *testing.T) {
	for _, pol := range []evict.Spec{evict.Adaptive, evict.TinyLFU, evict.AllKeysLRU} {
		t.Run(pol.Name, func(t *testing.T) {
			var e *Engine
			var listened atomic.Int64
			e, _ = newTest(t, Config{Shards: 1, MaxBytes: 64 * (EntryOverhead + 40), Policy: pol,
				OnRemove: func(r Removal) {
					e.Get(r.Key) // a listener that calls back in
					e.View("k1", func([]byte) { e.Get("k2") })
					listened.Add(1)
				}})
			var stop atomic.Bool
			var wg sync.WaitGroup
			for g := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; !stop.Load(); i++ {
						k := fmt.Sprintf("k%d", (i*7+g)%96) // hits and misses
						if i%3 == 0 {
							e.View(k, func([]byte) { e.Get(k) })
						} else {
							e.Get(k)
						}
					}
				}()
			}
			for i := range 300 {
				e.Set(fmt.Sprintf("k%d", i%96), make([]byte, 8+i%24))
			}
			e.Close()
			if _, ok := e.Get("k1"); ok {
				t.Error("a read after Close found a key")
			}
			stop.Store(true)
			wg.Wait()
			if listened.Load() == 0 {
				t.Fatal("nothing was evicted: the test exercises no eviction")
			}
		})
	}
}
