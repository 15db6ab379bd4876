package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidekv/tide/clock"
)

// model is the reference: a plain map and a manual clock.
type model struct {
	clk    *clock.Manual
	hwm    int64 // the engine's time never goes backwards: the highest reading
	m      map[string]mentry
	maxVer map[string]uint64 // highest version ever seen per key
}

type mentry struct {
	val      string
	ver      uint64
	deadline int64 // 0 = none
}

// live reports k's visible entry. Like the engine, the model forgets a key
// once any access observes it due, so a clock that goes back later does not
// resurrect it.
func (m *model) now() int64 { return max(m.hwm, m.clk.Now()) }

func (m *model) live(k string) (mentry, bool) {
	en, ok := m.m[k]
	if ok && en.deadline != 0 && m.now() >= en.deadline {
		delete(m.m, k)
		return mentry{}, false
	}
	return en, ok
}

// TestModel runs random operation sequences against the engine and the
// reference model, checking results and the engine's invariants after
// every step.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clk := clock.NewManual(t0)
		var removals []Removal
		e, err := New(Config{Shards: 2, Clock: clk, ExpiryInterval: -1,
			ExpiryBudget: expiryBudget(rapid.IntRange(1, 8).Draw(t, "budget")),
			OnRemove:     func(r Removal) { removals = append(removals, r) }})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		md := &model{clk: clk, hwm: clk.Now(), m: map[string]mentry{}, maxVer: map[string]uint64{}}
		// A key over 255 bytes and values either side of 65,535 bytes
		// have wide record headers (see flagWide): overwrites cross
		// between the widths.
		keyList := []string{"", "a", "b", "counter", "long-key-" + string(make([]byte, 40)), "wide-key-" + strings.Repeat("k", 250)}
		keys := rapid.SampledFrom(keyList)
		vals := rapid.SampledFrom([]string{"", "x", "12", "-7", "hello world", string(make([]byte, 300)), strings.Repeat("c", 65535), strings.Repeat("w", 65536)})
		ttls := rapid.SampledFrom([]time.Duration{NoTTL, 1, time.Millisecond, time.Second, time.Hour})

		// newVersion checks a write's version against the key's history.
		newVersion := func(t *rapid.T, k string, v uint64) {
			if v <= md.maxVer[k] {
				t.Fatalf("key %q: version %d not above %d", k, v, md.maxVer[k])
			}
			md.maxVer[k] = v
		}
		deadline := func(ttl time.Duration) int64 {
			if ttl == NoTTL {
				return 0
			}
			return md.now() + int64(ttl)
		}
		// expireModel drops due keys from the model when the engine would
		// have (any access removes them; we only compare visible state).
		t.Repeat(map[string]func(*rapid.T){
			"set": func(t *rapid.T) {
				k, v, ttl := keys.Draw(t, "k"), vals.Draw(t, "v"), ttls.Draw(t, "ttl")
				keep := rapid.Bool().Draw(t, "keep")
				onCreate := rapid.Bool().Draw(t, "onCreate")
				only := Condition(rapid.IntRange(0, 2).Draw(t, "only"))
				o := SetOptions{TTL: ttl, KeepTTL: keep, TTLOnCreate: onCreate, Only: only}
				if keep && !onCreate {
					o.TTL, ttl = 0, NoTTL // KeepTTL alone: a created key has none
				}
				ver, ok, err := e.SetWith(k, []byte(v), o)
				if err != nil {
					t.Fatalf("SetWith: %v", err)
				}
				cur, exists := md.live(k)
				wantOK := !(only == ConditionIfAbsent && exists) && !(only == ConditionIfPresent && !exists)
				if ok != wantOK {
					t.Fatalf("SetWith(%q,%+v) ok=%v want %v", k, o, ok, wantOK)
				}
				if !ok {
					return
				}
				newVersion(t, k, ver)
				d := deadline(ttl)
				if exists && (o.KeepTTL || o.TTLOnCreate) {
					d = cur.deadline
				}
				md.m[k] = mentry{v, ver, d}
			},
			"get": func(t *rapid.T) {
				k := keys.Draw(t, "k")
				it, ok := e.GetItem(k)
				want, wok := md.live(k)
				if ok != wok || (ok && (string(it.Value) != want.val || it.Version != want.ver)) {
					t.Fatalf("GetItem(%q) = %q,v%d,%v want %q,v%d,%v", k, it.Value, it.Version, ok, want.val, want.ver, wok)
				}
				if ok {
					wantTTL := NoTTL
					if want.deadline != 0 {
						wantTTL = time.Duration(want.deadline - md.now())
					}
					if it.TTL != wantTTL {
						t.Fatalf("GetItem(%q).TTL = %v want %v", k, it.TTL, wantTTL)
					}
				}
			},
			"delete": func(t *rapid.T) {
				k := keys.Draw(t, "k")
				_, want := md.live(k)
				if rapid.Bool().Draw(t, "load") {
					v, ok := e.GetAndDelete(k)
					if ok != want || (ok && string(v) != md.m[k].val) {
						t.Fatalf("GetAndDelete(%q) = %q,%v want %q,%v", k, v, ok, md.m[k].val, want)
					}
				} else if got := e.Delete(k); got != want {
					t.Fatalf("Delete(%q) = %v want %v", k, got, want)
				}
				delete(md.m, k)
			},
			"cas": func(t *rapid.T) {
				k, v := keys.Draw(t, "k"), vals.Draw(t, "v")
				cur, exists := md.live(k)
				old := cur.ver
				if rapid.Bool().Draw(t, "stale") || !exists {
					old = rapid.Uint64Range(0, md.maxVer[k]+1).Draw(t, "old")
				}
				wantOK := exists && old == cur.ver && old != 0
				if rapid.Bool().Draw(t, "delete") {
					if got := e.CompareAndDelete(k, old); got != wantOK {
						t.Fatalf("CompareAndDelete(%q,%d) = %v want %v", k, old, got, wantOK)
					}
					if wantOK {
						delete(md.m, k)
					}
					return
				}
				ver, ok, err := e.CompareAndSwap(k, old, []byte(v))
				if err != nil || ok != wantOK {
					t.Fatalf("CompareAndSwap(%q,%d) = %v,%v want %v", k, old, ok, err, wantOK)
				}
				if ok {
					newVersion(t, k, ver)
					md.m[k] = mentry{v, ver, cur.deadline}
				}
			},
			"incr": func(t *rapid.T) {
				k := keys.Draw(t, "k")
				delta := rapid.SampledFrom([]int64{1, -1, 1 << 62, -(1 << 62), 0}).Draw(t, "delta")
				ttl := ttls.Draw(t, "ttl")
				n, err := e.IncrWith(k, delta, IncrOptions{TTL: ttl})
				cur, exists := md.live(k)
				var base int64
				if exists {
					b, perr := strconv.ParseInt(cur.val, 10, 64)
					if perr != nil || strconv.FormatInt(b, 10) != cur.val {
						if !errors.Is(err, ErrNotInteger) {
							t.Fatalf("Incr on %q: got %v want ErrNotInteger", cur.val, err)
						}
						return
					}
					base = b
				}
				sum := base + delta
				if (delta > 0 && sum < base) || (delta < 0 && sum > base) {
					if !errors.Is(err, ErrOverflow) {
						t.Fatalf("Incr %d+%d: got %v want ErrOverflow", base, delta, err)
					}
					return
				}
				if err != nil || n != sum {
					t.Fatalf("Incr %d+%d = %d,%v", base, delta, n, err)
				}
				it, _ := e.GetItem(k)
				newVersion(t, k, it.Version)
				d := cur.deadline
				if !exists {
					d = deadline(ttl)
				}
				md.m[k] = mentry{strconv.FormatInt(sum, 10), it.Version, d}
			},
			"expire": func(t *rapid.T) {
				k := keys.Draw(t, "k")
				ttl := rapid.SampledFrom([]time.Duration{-time.Second, 0, 1, time.Second, time.Hour}).Draw(t, "ttl")
				cond := ExpireCondition(rapid.IntRange(0, 4).Draw(t, "cond"))
				ok, err := e.Expire(k, ttl, cond)
				if ttl <= 0 {
					if !errors.Is(err, ErrInvalidTTL) || ok {
						t.Fatalf("Expire(%q, %v) = %v, %v; want ErrInvalidTTL", k, ttl, ok, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				cur, exists := md.live(k)
				d := md.now() + int64(max(ttl, 0))
				want := exists
				if exists {
					switch cond {
					case ExpireConditionNX:
						want = cur.deadline == 0
					case ExpireConditionXX:
						want = cur.deadline != 0
					case ExpireConditionGT:
						want = cur.deadline != 0 && d > cur.deadline
					case ExpireConditionLT:
						want = cur.deadline == 0 || d < cur.deadline
					}
				}
				if ok != want {
					t.Fatalf("Expire(%q,%v,%d) = %v want %v", k, ttl, cond, ok, want)
				}
				if ok {
					cur.deadline = d
					md.m[k] = cur
				}
			},
			"persist": func(t *rapid.T) {
				k := keys.Draw(t, "k")
				cur, exists := md.live(k)
				want := exists && cur.deadline != 0
				if got, err := e.Persist(k); err != nil || got != want {
					t.Fatalf("Persist(%q) = %v want %v", k, got, want)
				}
				if want {
					cur.deadline = 0
					md.m[k] = cur
				}
			},
			"getex": func(t *rapid.T) {
				k := keys.Draw(t, "k")
				ttl := ttls.Draw(t, "ttl")
				if ttl == NoTTL {
					ttl = time.Second
				}
				it, ok, err := e.GetAndExpire(k, ttl)
				cur, exists := md.live(k)
				if err != nil || ok != exists || (ok && string(it.Value) != cur.val) {
					t.Fatalf("GetAndExpire(%q) = %q,%v,%v want %q,%v", k, it.Value, ok, err, cur.val, exists)
				}
				if ok {
					cur.deadline = deadline(ttl)
					md.m[k] = cur
				}
			},
			"commit": func(t *rapid.T) {
				k1, k2 := keys.Draw(t, "k1"), keys.Draw(t, "k2")
				if k1 == k2 {
					return
				}
				c1, e1 := md.live(k1)
				pv := c1.ver
				if !e1 {
					pv = 0
				}
				if rapid.Bool().Draw(t, "stale") {
					pv++
				}
				v := vals.Draw(t, "v")
				del := rapid.Bool().Draw(t, "del")
				vers, ok, err := e.Commit([]Precondition{{k1, pv}}, []Op{{Key: k1, Value: []byte(v), TTL: NoTTL}, {Key: k2, Delete: del, Value: []byte(v), TTL: NoTTL}})
				want := (e1 && pv == c1.ver) || (!e1 && pv == 0)
				if err != nil || ok != want {
					t.Fatalf("Commit pre %q=v%d: %v,%v want %v", k1, pv, ok, err, want)
				}
				if !ok {
					return
				}
				newVersion(t, k1, vers[0])
				md.m[k1] = mentry{v, vers[0], 0}
				if del {
					delete(md.m, k2)
				} else {
					newVersion(t, k2, vers[1])
					md.m[k2] = mentry{v, vers[1], 0}
				}
			},
			"advance": func(t *rapid.T) {
				clk.Advance(rapid.SampledFrom([]time.Duration{1, time.Millisecond, time.Second, time.Hour, -time.Millisecond, -time.Hour}).Draw(t, "d"))
				e.Stats() // the engine reads the clock
				md.hwm = md.now()
			},
			"cycle": func(t *rapid.T) {
				e.RunExpiryCycle()
			},
			// A forced compaction of a shard (a rebuild, which drops the
			// deadline words of cleared TTLs and remaps the table into a
			// new array, or a move), open to lock-free readers as a
			// write's is: while it copies, every key reads as the model
			// has it, and after it the next steps find the records where
			// the table and the slots now name them.
			"compact": func(t *rapid.T) {
				s := &e.shards[rapid.IntRange(0, len(e.shards)-1).Draw(t, "shard")]
				rebuild := rapid.Bool().Draw(t, "rebuild")
				room := 8 * rapid.IntRange(0, 64).Draw(t, "room")
				var windowErr string
				testHookCompacting = func(hs *shard) {
					for _, k := range keyList {
						ks, h := e.shardFor(k)
						if ks != hs {
							continue
						}
						want, wok := md.m[k]
						if wok && want.deadline != 0 && md.now() >= want.deadline {
							wok = false
						}
						var pk peeked
						e.peek(hs, k, h, false, &pk)
						switch {
						case pk.r == peekHit:
							v := loadValue(nil, pk.arena, pk.val, pk.vlen)
							ver := atomic.LoadUint64(hdr64(pk.arena, pk.off+hdrVersion))
							if !pk.valid(hs) {
								windowErr = fmt.Sprintf("a read of %q in the window did not validate", k)
							} else if !wok || string(v) != want.val || ver != want.ver || pk.deadline != want.deadline {
								windowErr = fmt.Sprintf("read %q = %q v%d deadline %d in the window; model %+v, %v", k, v, ver, pk.deadline, want, wok)
							}
						case pk.r == peekMiss, pk.r == peekDue:
							if wok {
								windowErr = fmt.Sprintf("%q missing in the window; model %+v", k, want)
							}
						default:
							windowErr = fmt.Sprintf("a read of %q in the window was inconclusive", k)
						}
					}
				}
				s.mu.Lock()
				if rebuild {
					s.rebuildLocked(len(s.arena)-s.garbage+room, s.openLocked())
				} else {
					s.moveLocked(len(s.arena)+room, s.openLocked())
				}
				s.mu.Unlock()
				testHookCompacting = nil
				if windowErr != "" {
					t.Fatal(windowErr)
				}
			},
			"": func(t *rapid.T) {
				if err := e.Check(); err != nil {
					t.Fatal(err)
				}
				// Visible state equals the model's.
				for k := range md.m {
					md.live(k) // Items observes every key
				}
				n := 0
				for k, it := range e.Items() {
					want, ok := md.live(k)
					if !ok || string(it.Value) != want.val || it.Version != want.ver {
						t.Fatalf("Items: %q=%q v%d, model %q v%d %v", k, it.Value, it.Version, want.val, want.ver, ok)
					}
					n++
				}
				wantN := 0
				for k := range md.m {
					if _, ok := md.m[k]; ok {
						wantN++
					}
				}
				if n != wantN {
					t.Fatalf("Items yielded %d, model has %d live", n, wantN)
				}
				// Every removal was of a real version.
				for _, r := range removals {
					if r.Version == 0 || r.Version > md.maxVer[r.Key] {
						t.Fatalf("removal %+v names an unknown version", r)
					}
				}
				removals = removals[:0]
			},
		})
	})
}
