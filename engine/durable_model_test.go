package engine

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// modelEntry is the reference model's view of a key.
type modelEntry struct {
	val      string
	ver      uint64
	deadline int64 // 0 = none
	pinned   bool
}

// TestDurableModelWithRestarts runs random operations against the engine
// and a reference map, restarting the engine (a clean Close, or a crash of
// the file system under SyncAlways) and rewriting the log at random
// moments: after every restart the engine must hold exactly the reference
// state, versions and deadlines included.
func TestDurableModelWithRestarts(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 5
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runDurableModel(t, seed) })
	}
}

func runDurableModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	clk := clock.NewManual(t0)
	fs := faultfs.New()
	cfg := Config{Shards: 4, Durability: Durability{Sync: SyncAlways}}
	e := mustOpenDurable(t, fs, "", clk, cfg)
	defer func() { e.Close() }()
	ref := map[string]modelEntry{}
	var maxV uint64
	key := func() string { return "k" + strconv.Itoa(rng.IntN(12)) }
	live := func(k string) (modelEntry, bool) {
		m, ok := ref[k]
		if ok && m.deadline != 0 && m.deadline <= clk.Now() {
			delete(ref, k)
			return modelEntry{}, false
		}
		return m, ok
	}
	check := func(when string) {
		t.Helper()
		got := dump(e)
		for k := range ref {
			live(k)
		}
		want := map[string]Item{}
		for k, m := range ref {
			it := Item{Value: []byte(m.val), Version: m.ver, TTL: NoTTL, Pinned: m.pinned}
			if m.deadline != 0 {
				it.TTL = time.Duration(m.deadline - clk.Now())
			}
			want[k] = it
		}
		if d := diffDumps(want, got); d != "" {
			t.Fatalf("%s:\n%s", when, d)
		}
	}
	for step := range 400 {
		k := key()
		op := rng.IntN(13)
		switch op {
		case 0, 1:
			val := strconv.Itoa(step)
			v, err := e.Set(k, []byte(val))
			if err != nil {
				t.Fatal(err)
			}
			m, _ := live(k)
			ref[k] = modelEntry{val: val, ver: v, pinned: m.pinned}
		case 2:
			val := strconv.Itoa(step)
			ttl := time.Duration(1+rng.IntN(10)) * time.Second
			v, err := e.SetTTL(k, []byte(val), ttl)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := live(k)
			ref[k] = modelEntry{val: val, ver: v, deadline: clk.Now() + int64(ttl), pinned: m.pinned}
		case 3:
			_, ok := live(k)
			if got := e.Delete(k); got != ok {
				t.Fatalf("step %d: Delete(%s) = %v, model %v", step, k, got, ok)
			}
			delete(ref, k)
		case 4:
			m, ok := live(k)
			if ok {
				if _, err := strconv.ParseInt(m.val, 10, 64); err != nil || m.val != strconv.Itoa(mustAtoi(m.val)) {
					continue // not a counter
				}
			}
			n, err := e.Incr(k)
			if err != nil {
				t.Fatalf("step %d: Incr: %v", step, err)
			}
			it, _ := e.GetItem(k)
			m.val, m.ver = strconv.FormatInt(n, 10), it.Version
			ref[k] = m
		case 5:
			ttl := time.Duration(1+rng.IntN(10)) * time.Second
			m, ok := live(k)
			done, err := e.Expire(k, ttl, ExpireConditionAlways)
			if err != nil || done != ok {
				t.Fatalf("step %d: Expire = %v, %v; model %v", step, done, err, ok)
			}
			if ok {
				m.deadline = clk.Now() + int64(ttl)
				ref[k] = m
			}
		case 6:
			m, ok := live(k)
			if got, err := e.Persist(k); err != nil || got != (ok && m.deadline != 0) {
				t.Fatalf("step %d: Persist = %v", step, got)
			}
			if ok {
				m.deadline = 0
				ref[k] = m
			}
		case 7:
			m, ok := live(k)
			pin := rng.IntN(2) == 0
			if got, err := e.Pin(k, pin); err != nil || got != ok {
				t.Fatalf("step %d: Pin = %v", step, got)
			}
			if ok {
				m.pinned = pin
				ref[k] = m
			}
		case 8:
			k2 := key()
			if k2 == k {
				continue
			}
			val := strconv.Itoa(step)
			vs, ok, err := e.Commit(nil, []Op{{Key: k, Value: []byte(val), KeepTTL: true}, {Key: k2, Delete: true}})
			if err != nil || !ok {
				t.Fatalf("step %d: Commit = %v, %v", step, ok, err)
			}
			m, _ := live(k)
			m.val, m.ver = val, vs[0]
			ref[k] = m
			delete(ref, k2)
		case 9:
			clk.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
		case 10:
			if err := e.Rewrite(); err != nil {
				t.Fatal(err)
			}
		case 11:
			check(fmt.Sprintf("step %d: before a restart", step))
			e.Close()
			e = mustOpenDurable(t, fs, "", clk, cfg)
			check(fmt.Sprintf("step %d: after a restart", step))
			probeVersion(t, e, maxV)
		case 12:
			// SyncAlways: a crash loses nothing acknowledged.
			fs = fs.Crash(seed + uint64(step))
			e.Close() // fails: the file system is gone, as for a killed process
			e = mustOpenDurable(t, fs, "", clk, cfg)
			check(fmt.Sprintf("step %d: after a crash", step))
			probeVersion(t, e, maxV)
		}
		for _, m := range ref {
			maxV = max(maxV, m.ver)
		}
	}
	check("at the end")
}

// probeVersion checks that a write after a restart gets a version above
// every version handed out before it (maxV), whatever its shard.
func probeVersion(t *testing.T, e *Engine, maxV uint64) {
	t.Helper()
	v, err := e.Set("probe", nil)
	if err != nil || v <= maxV {
		t.Fatalf("version %d after a restart, handed out up to %d (%v)", v, maxV, err)
	}
	e.Delete("probe")
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
