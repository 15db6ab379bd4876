package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
)

// r8entry is the reference model's view of one key.
type r8entry struct {
	val      string
	ver      uint64
	deadline int64 // 0: none
	pinned   bool
}

type r8key struct {
	k   string
	ver uint64
}

// r8model is a map kept in step with the engine, plus every (key, version)
// the listener reported evicted or expired, so that a write whose value a
// write-back inside the listener already evicted is not resurrected.
type r8model struct {
	clk     *clock.Manual
	m       map[string]r8entry
	removed map[r8key]bool
}

func (md *r8model) live(k string) (r8entry, bool) {
	en, ok := md.m[k]
	if ok && en.deadline != 0 && md.clk.Now() >= en.deadline {
		delete(md.m, k)
		return r8entry{}, false
	}
	return en, ok
}

func (md *r8model) put(k string, en r8entry) {
	if md.removed[r8key{k, en.ver}] {
		delete(md.m, k)
		return
	}
	md.m[k] = en
}

// TestReview8RandomOpsKeepSlotHintAndModel drives one or two shards
// through random sequences of every write path (in-place overwrites of
// every padded length, appends, shrink then grow, zero-length and
// capped-size values, TTL kept, given, cleared and given on create, pins,
// counters, commits of several keys of one shard, Views whose fn writes
// the key it views, evictions under a byte cap, a listener that writes
// back, lazy and active expiry on a manual clock, arena rebuilds) and
// checks after every operation that Engine.Check passes (the remembered
// slot word among its invariants) and that the touched keys read as the
// model says; every 16th operation every key is compared. The durable
// configurations then replay their log into a new engine, which must
// hold the same keys.
func TestReview8RandomOpsKeepSlotHintAndModel(t *testing.T) {
	cases := []struct {
		name     string
		shards   int
		maxBytes int64
		policy   evict.Spec
		durable  bool
		seeds    int
		ops      int
	}{
		{"unbounded-1shard", 1, 0, evict.NoEviction, false, 6, 1500},
		{"unbounded-2shards-durable", 2, 0, evict.NoEviction, true, 3, 1000},
		{"lru-capped", 1, 6 << 10, evict.AllKeysLRU, false, 6, 1500},
		{"tinylfu-capped", 1, 6 << 10, evict.TinyLFU, false, 6, 1500},
		{"adaptive-capped", 1, 6 << 10, evict.Adaptive, false, 6, 1500},
		{"volatile-lru-capped", 1, 6 << 10, evict.VolatileLRU, false, 4, 1500},
		{"s3fifo-capped-2shards-durable", 2, 8 << 10, evict.S3FIFO, true, 3, 1000},
	}
	for _, tc := range cases {
		for seed := range tc.seeds {
			t.Run(fmt.Sprintf("%s/seed%d", tc.name, seed), func(t *testing.T) {
				r8run(t, tc.shards, tc.maxBytes, tc.policy, tc.durable, uint64(seed), tc.ops)
			})
		}
	}
}

func r8run(t *testing.T, shards int, maxBytes int64, policy evict.Spec, durable bool, seed uint64, nops int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed8))
	clk := clock.NewManual(t0)
	md := &r8model{clk: clk, m: map[string]r8entry{}, removed: map[r8key]bool{}}
	var e *Engine
	var step string
	depth := 0
	writeBacks := 0
	onRemove := func(r Removal) {
		switch r.Cause {
		case CauseEvicted, CauseExpired:
			md.removed[r8key{r.Key, r.Version}] = true
			if en, ok := md.m[r.Key]; ok && en.ver == r.Version {
				if r.Cause == CauseEvicted {
					if en.pinned {
						t.Errorf("%s: pinned key %q evicted", step, r.Key)
					}
					if policy.Name == evict.VolatileLRU.Name && en.deadline == 0 {
						t.Errorf("%s: key %q without TTL evicted by %s", step, r.Key, policy.Name)
					}
				}
				if r.Cause == CauseExpired && (en.deadline == 0 || clk.Now() < en.deadline) {
					t.Errorf("%s: key %q expired at %d, deadline %d", step, r.Key, clk.Now(), en.deadline)
				}
				if string(r.Value) != en.val {
					t.Errorf("%s: removal of %q v%d carries %d bytes, want %d", step, r.Key, r.Version, len(r.Value), len(en.val))
				}
				delete(md.m, r.Key)
			}
			// A listener that writes back (on the caller's goroutine,
			// after the operation's locks are released).
			if r.Cause == CauseEvicted && depth == 0 && e != nil && writeBacks < 200 && rng.IntN(4) == 0 {
				depth++
				writeBacks++
				v := r8value(rng, 1+rng.IntN(100))
				ver, err := e.Set("wb", v)
				depth--
				switch {
				case err == nil:
					wen, wex := md.live("wb")
					md.put("wb", r8entry{val: string(v), ver: ver, pinned: wex && wen.pinned})
				case !errors.Is(err, ErrOutOfMemory):
					t.Errorf("write-back: %v", err)
				}
			}
		}
	}
	cfg := Config{Shards: shards, Clock: clk, ExpiryInterval: -1, MaxBytes: maxBytes, Policy: policy,
		ExpiryBudget: expiryBudget(1 + rng.IntN(8)), OnRemove: onRemove}
	if durable {
		cfg.Durability = Durability{Dir: t.TempDir(), Sync: SyncNo, RewritePercent: NoAutoRewrite}
	}
	var err error
	e, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()

	keys := make([]string, 0, 25)
	for i := range 24 {
		keys = append(keys, fmt.Sprintf("k%02d", i)+strings.Repeat("x", i%10))
	}
	keys = append(keys, "") // the empty key: a record of a header and its value only
	// Only the listener writes "wb" (an op's model update after it
	// returns would otherwise undo a write-back made meanwhile).
	checked := append(append([]string(nil), keys...), "wb", "ctr")
	lens := []int{0, 1, 7, 8, 9, 15, 16, 17, 56, 57, 60, 63, 64, 65, 72, 120, 200, 300}
	maxVal := func(k string) int {
		if maxBytes == 0 {
			return 4096
		}
		return int(maxBytes) - EntryOverhead - len(k)
	}
	pickLen := func(k string) int {
		if rng.IntN(60) == 0 {
			return maxVal(k)
		}
		return lens[rng.IntN(len(lens))]
	}
	ttls := []time.Duration{NoTTL, time.Millisecond, 10 * time.Millisecond, time.Second}
	// okErr accepts what a write may fail with under a cap (pinned
	// entries or the key's own size leaving no room).
	okErr := func(err error) bool {
		return err == nil || maxBytes > 0 && errors.Is(err, ErrOutOfMemory)
	}
	compare := func(k string) {
		t.Helper()
		it, ok := e.GetItem(k)
		want, wok := md.live(k)
		if ok != wok {
			t.Fatalf("%s: GetItem(%q) found %v, want %v (model %+v)", step, k, ok, wok, want)
		}
		if !ok {
			return
		}
		wantTTL := NoTTL
		if want.deadline != 0 {
			wantTTL = time.Duration(want.deadline - clk.Now())
		}
		if string(it.Value) != want.val || it.Version != want.ver || it.TTL != wantTTL || it.Pinned != want.pinned {
			t.Fatalf("%s: GetItem(%q) = %d bytes v%d ttl %v pinned %v, want %d bytes v%d ttl %v pinned %v (same bytes %v)",
				step, k, len(it.Value), it.Version, it.TTL, it.Pinned, len(want.val), want.ver, wantTTL, want.pinned, string(it.Value) == want.val)
		}
		var got []byte
		if !e.View(k, func(v []byte) { got = append(got, v...) }) || string(got) != want.val {
			t.Fatalf("%s: View(%q) = %d bytes, want %d", step, k, len(got), len(want.val))
		}
	}
	check := func(touched ...string) {
		t.Helper()
		if err := e.Check(); err != nil {
			t.Fatalf("%s: Check: %v", step, err)
		}
		for _, k := range touched {
			compare(k)
		}
		if err := e.Check(); err != nil {
			t.Fatalf("%s: Check after reads: %v", step, err)
		}
	}

	for i := range nops {
		k := keys[rng.IntN(len(keys))]
		en, exists := md.live(k)
		switch op := rng.IntN(20); op {
		case 0, 1, 2, 3: // SetWith with random options
			v := r8value(rng, pickLen(k))
			o := SetOptions{TTL: ttls[rng.IntN(len(ttls))], Pin: rng.IntN(8) == 0}
			switch rng.IntN(4) {
			case 0:
				o.KeepTTL, o.TTL = true, 0
			case 1:
				o.TTLOnCreate = true
			}
			if rng.IntN(6) == 0 {
				o.Only = Condition(1 + rng.IntN(2))
			}
			step = fmt.Sprintf("op %d: SetWith(%q, %d bytes, %+v)", i, k, len(v), o)
			ver, ok, err := e.SetWith(k, v, o)
			if !okErr(err) {
				t.Fatalf("%s: %v", step, err)
			}
			wantOK := !(o.Only == ConditionIfAbsent && exists) && !(o.Only == ConditionIfPresent && !exists)
			if err == nil && ok != wantOK {
				t.Fatalf("%s: ok %v, want %v", step, ok, wantOK)
			}
			if err == nil && ok {
				d := int64(0)
				switch {
				case exists && (o.KeepTTL || o.TTLOnCreate):
					d = en.deadline
				case o.TTL > 0:
					d = clk.Now() + int64(o.TTL)
				}
				md.put(k, r8entry{val: string(v), ver: ver, deadline: d, pinned: o.Pin || exists && en.pinned})
			}
			check(k)
		case 4, 5, 6: // overwrite an existing key with a value of the same length, or one within its padded size
			if !exists {
				continue
			}
			n := len(en.val)
			if rng.IntN(2) == 0 && n > 0 {
				n = max(0, (n+7)&^7-rng.IntN(8))
			}
			v := r8value(rng, n)
			o := SetOptions{KeepTTL: true}
			if rng.IntN(3) == 0 {
				o = SetOptions{TTL: ttls[rng.IntN(len(ttls))]}
			}
			step = fmt.Sprintf("op %d: overwrite(%q, %d→%d bytes, %+v)", i, k, len(en.val), len(v), o)
			ver, _, err := e.SetWith(k, v, o)
			if !okErr(err) {
				t.Fatalf("%s: %v", step, err)
			}
			if err == nil {
				d := en.deadline
				if !o.KeepTTL {
					d = 0
					if o.TTL > 0 {
						d = clk.Now() + int64(o.TTL)
					}
				}
				md.put(k, r8entry{val: string(v), ver: ver, deadline: d, pinned: en.pinned})
			}
			check(k)
		case 7: // delete
			step = fmt.Sprintf("op %d: Delete(%q)", i, k)
			if got := e.Delete(k); got != exists {
				t.Fatalf("%s = %v, want %v", step, got, exists)
			}
			delete(md.m, k)
			check(k)
		case 8: // Expire, Persist or GetAndExpire
			ttl := ttls[1+rng.IntN(len(ttls)-1)]
			switch rng.IntN(3) {
			case 0:
				step = fmt.Sprintf("op %d: Expire(%q, %v)", i, k, ttl)
				ok, err := e.Expire(k, ttl, ExpireConditionAlways)
				if err != nil || ok != exists {
					t.Fatalf("%s = %v, %v, want %v", step, ok, err, exists)
				}
				if ok {
					en.deadline = clk.Now() + int64(ttl)
					md.m[k] = en
				}
			case 1:
				step = fmt.Sprintf("op %d: Persist(%q)", i, k)
				ok, err := e.Persist(k)
				if err != nil || ok != (exists && en.deadline != 0) {
					t.Fatalf("%s = %v, %v, want %v", step, ok, err, exists && en.deadline != 0)
				}
				if exists {
					en.deadline = 0
					md.m[k] = en
				}
			case 2:
				step = fmt.Sprintf("op %d: GetAndExpire(%q, %v)", i, k, ttl)
				it, ok, err := e.GetAndExpire(k, ttl)
				if err != nil || ok != exists || ok && (string(it.Value) != en.val || it.Version != en.ver || it.TTL != ttl) {
					t.Fatalf("%s = %d bytes v%d ttl %v %v, %v; want %v v%d", step, len(it.Value), it.Version, it.TTL, ok, err, exists, en.ver)
				}
				if ok {
					en.deadline = clk.Now() + int64(ttl)
					md.m[k] = en
				}
			}
			check(k)
		case 9: // Pin or unpin
			pin := rng.IntN(2) == 0
			step = fmt.Sprintf("op %d: Pin(%q, %v)", i, k, pin)
			ok, err := e.Pin(k, pin)
			if err != nil || ok != exists {
				t.Fatalf("%s = %v, %v, want %v", step, ok, err, exists)
			}
			if ok {
				en.pinned = pin
				md.m[k] = en
			}
			check(k)
		case 10: // a counter whose digits grow and shrink
			const ck = "ctr"
			cen, cex := md.live(ck)
			delta := int64(rng.IntN(2_000_000)) - 1_000_000
			step = fmt.Sprintf("op %d: IncrBy(%q, %d)", i, ck, delta)
			n, err := e.IncrBy(ck, delta)
			if !okErr(err) {
				t.Fatalf("%s: %v", step, err)
			}
			if err == nil {
				var old int64
				if cex {
					old, _ = strconv.ParseInt(cen.val, 10, 64)
				}
				if n != old+delta {
					t.Fatalf("%s = %d, want %d", step, n, old+delta)
				}
				it, ok := e.GetItem(ck)
				if !ok {
					// A write-back in the listener may have evicted it.
					if maxBytes == 0 {
						t.Fatalf("%s: counter gone", step)
					}
					delete(md.m, ck)
				} else {
					md.put(ck, r8entry{val: strconv.FormatInt(n, 10), ver: it.Version, deadline: cen.deadline, pinned: cen.pinned})
				}
			}
			check(ck)
		case 11, 12: // a commit of 2 or 3 keys (all in one shard when there is one)
			n := 2 + rng.IntN(2)
			perm := rng.Perm(len(keys))[:n]
			ops := make([]Op, n)
			for j, p := range perm {
				ops[j] = Op{Key: keys[p], Value: r8value(rng, pickLen(keys[p])/2), TTL: ttls[rng.IntN(len(ttls))], Pin: rng.IntN(10) == 0}
				if rng.IntN(4) == 0 {
					ops[j] = Op{Key: keys[p], Delete: true}
				}
			}
			step = fmt.Sprintf("op %d: Commit(%d ops)", i, n)
			before := make([]r8entry, n)
			had := make([]bool, n)
			for j, op := range ops {
				before[j], had[j] = md.live(op.Key)
			}
			vers, ok, err := e.Commit(nil, ops)
			if !okErr(err) || err == nil && !ok {
				t.Fatalf("%s: %v, %v", step, ok, err)
			}
			touched := make([]string, n)
			for j, op := range ops {
				touched[j] = op.Key
				if err != nil {
					continue
				}
				if op.Delete {
					delete(md.m, op.Key)
					continue
				}
				d := int64(0)
				if op.TTL > 0 {
					d = clk.Now() + int64(op.TTL)
				}
				md.put(op.Key, r8entry{val: string(op.Value), ver: vers[j], deadline: d, pinned: op.Pin || had[j] && before[j].pinned})
			}
			check(touched...)
		case 13: // a View whose fn overwrites the key it views
			if !exists {
				continue
			}
			v := r8value(rng, pickLen(k)/2)
			step = fmt.Sprintf("op %d: View(%q) writing %d bytes inside", i, k, len(v))
			var ver uint64
			var werr error
			found := e.View(k, func(cur []byte) {
				was := bytes.Clone(cur)
				if string(was) != en.val {
					t.Errorf("%s: fn got %d bytes, want %d", step, len(was), len(en.val))
				}
				ver, _, werr = e.SetWith(k, v, SetOptions{KeepTTL: true})
				if !bytes.Equal(cur, was) {
					t.Errorf("%s: the bytes fn holds changed under its own write", step)
				}
				if werr == nil && !bytes.Equal(cur, was) {
					t.Errorf("%s: value changed", step)
				}
			})
			if !found {
				t.Fatalf("%s: not found", step)
			}
			if !okErr(werr) {
				t.Fatalf("%s: %v", step, werr)
			}
			if werr == nil {
				md.put(k, r8entry{val: string(v), ver: ver, deadline: en.deadline, pinned: en.pinned})
			}
			check(k)
		case 14: // the clock moves
			d := time.Duration(rng.IntN(4)) * time.Millisecond
			clk.Advance(d)
			step = fmt.Sprintf("op %d: Advance(%v)", i, d)
			check(k)
		case 15: // active expiry
			step = fmt.Sprintf("op %d: RunExpiryCycle", i)
			e.RunExpiryCycle()
			check(k)
		case 16: // GetAndDelete / CompareAndDelete
			step = fmt.Sprintf("op %d: GetAndDelete(%q)", i, k)
			v, ok := e.GetAndDelete(k)
			if ok != exists || ok && string(v) != en.val {
				t.Fatalf("%s = %d bytes, %v, want %v", step, len(v), ok, exists)
			}
			delete(md.m, k)
			check(k)
		case 17: // CompareAndSwap with the right version
			if !exists {
				continue
			}
			v := r8value(rng, pickLen(k))
			step = fmt.Sprintf("op %d: CompareAndSwap(%q, v%d, %d bytes)", i, k, en.ver, len(v))
			ver, ok, err := e.CompareAndSwap(k, en.ver, v)
			if !okErr(err) || err == nil && !ok {
				t.Fatalf("%s: %v, %v", step, ok, err)
			}
			if err == nil {
				md.put(k, r8entry{val: string(v), ver: ver, deadline: en.deadline, pinned: en.pinned})
			}
			check(k)
		default: // reads
			step = fmt.Sprintf("op %d: reads", i)
			check(k)
		}
		if i%16 == 0 {
			step = fmt.Sprintf("after op %d", i)
			check(checked...)
		}
	}
	step = "end"
	check(checked...)

	if !durable {
		return
	}
	// The log replays into an engine that holds what the model holds.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.OnRemove = nil
	e, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	step = "after replay"
	if err := e.Check(); err != nil {
		t.Fatalf("%s: Check: %v", step, err)
	}
	// Exactly: value, version, deadline and pin (replaySet).
	for _, k := range checked {
		compare(k)
	}
	// And keeps taking writes of every kind.
	for i := range 300 {
		k := keys[rng.IntN(len(keys))]
		v := r8value(rng, pickLen(k))
		if _, _, err := e.SetWith(k, v, SetOptions{TTL: ttls[rng.IntN(len(ttls))]}); !okErr(err) {
			t.Fatalf("replayed engine: op %d: %v", i, err)
		}
		if err := e.Check(); err != nil {
			t.Fatalf("replayed engine: op %d: %v", i, err)
		}
	}
}

// r8value is n random bytes.
func r8value(rng *rand.Rand, n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return v
}
