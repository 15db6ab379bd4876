package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tidekv/tide/evict"
)

// bestHits is the most hits any policy can get on keys[i:] with the cache
// holding in, at capacity c, when every miss may insert the key (evicting
// any cached key) or bypass it: an exhaustive search, for tiny traces.
func bestHits(keys []uint64, i int, in map[uint64]bool, c int) int {
	if i == len(keys) {
		return 0
	}
	k := keys[i]
	if in[k] {
		return 1 + bestHits(keys, i+1, in, c)
	}
	best := bestHits(keys, i+1, in, c) // bypass
	if len(in) < c {
		in[k] = true
		best = max(best, bestHits(keys, i+1, in, c))
		delete(in, k)
		return best
	}
	for v := range in {
		delete(in, v)
		in[k] = true
		best = max(best, bestHits(keys, i+1, in, c))
		delete(in, k)
		in[v] = true
	}
	return best
}

func optHits(keys []uint64, c int) int {
	o := NewOPT(keys, c)
	hits := 0
	for _, k := range keys {
		if o.Access(k) {
			hits++
		}
	}
	return hits
}

// TestOPTIsOptimal guards the claim that OPT is the ceiling: on random tiny
// traces it gets exactly the hits of an exhaustive search over every
// insert, evict and bypass choice.
func TestOPTIsOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		n, distinct, c := 4+r.IntN(9), 2+r.IntN(4), 1+r.IntN(3)
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = uint64(r.IntN(distinct))
		}
		if got, want := optHits(keys, c), bestHits(keys, 0, map[uint64]bool{}, c); got != want {
			t.Fatalf("trial %d: keys %v cap %d: OPT %d hits, exhaustive search %d", trial, keys, c, got, want)
		}
	}
}

// TestOPTBoundsEveryPolicy guards the ceiling on realistic traces: no
// policy beats OPT, and with room for every key OPT misses only the first
// reference of each key.
func TestOPTBoundsEveryPolicy(t *testing.T) {
	keys := Zipf(0.9, 20_000, 60_000, 5)
	unique := map[uint64]bool{}
	for _, k := range keys {
		unique[k] = true
	}
	for _, c := range []int{100, 1000} {
		opt := 100 * float64(optHits(keys, c)) / float64(len(keys))
		for _, s := range append([]evict.Spec{}, evict.Specs[1:]...) {
			if s.Volatile || s.New == nil {
				continue
			}
			if r := HitRatio(keys, NewPolicyCache(s, c)); r > opt+1e-9 {
				t.Errorf("cap %d: %s %.2f beats OPT %.2f", c, s.Name, r, opt)
			}
		}
		if r := HitRatio(keys, NewExactLRU(c)); r > opt {
			t.Errorf("cap %d: exact LRU %.2f beats OPT %.2f", c, r, opt)
		}
	}
	if got, want := optHits(keys, len(unique)), len(keys)-len(unique); got != want {
		t.Errorf("OPT with room for all %d keys: %d hits, want %d", len(unique), got, want)
	}
}

// TestEngineCacheHoldsCapacity guards the through-the-engine harness: with
// one shard (small caps) and exact LRU, the engine must reproduce the
// exact LRU's hit ratio (within what allkeys-lru's lossy reads cost), which it can only do if MaxBytes holds exactly
// capacity entries.
func TestEngineCacheHoldsCapacity(t *testing.T) {
	keys := Zipf(0.9, 5_000, 40_000, 9)
	for _, c := range []int{1, 50, 700} {
		ec, err := NewEngineCache(evict.AllKeysLRU, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ec.Shards() != 1 {
			t.Fatalf("cap %d: %d shards, want 1 for a cap below 1 MiB", c, ec.Shards())
		}
		got := HitRatio(keys, ec)
		if ec.Err() != nil {
			t.Fatal(ec.Err())
		}
		if n := ec.e.Stats().Entries; n != c {
			t.Errorf("cap %d: engine holds %d keys", c, n)
		}
		ec.Close()
		// tide's allkeys-lru drops a read now and then (its read path
		// is lock-free), so allow a few hundredths of a point.
		if want := HitRatio(keys, NewExactLRU(c)); math.Abs(got-want) > 0.05 {
			t.Errorf("cap %d: engine allkeys-lru %.4f, exact LRU %.4f", c, got, want)
		}
	}
}

// TestAdaptiveInSimulator guards, through the simulator the table comes
// from, that Adaptive (the recommended policy) adapts: on a working set that slides
// (recency wins, old counts mislead a frequency sketch) it beats TinyLFU by
// at least a point, and on a Zipf workload (frequency wins) it stays within
// half a point of TinyLFU. The runs are deterministic (fixed hash).
func TestAdaptiveInSimulator(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shift := make([]uint64, 400_000)
	for i := range shift {
		shift[i] = uint64(i/16 + r.IntN(3000))
	}
	zipf := Zipf(0.9, 100_000, 400_000, 3)
	for _, tc := range []struct {
		name string
		keys []uint64
		gain float64 // adaptive − tinylfu must be at least this
	}{
		{"sliding working set", shift, 1},
		{"zipf 0.9", zipf, -0.5},
	} {
		a := HitRatio(tc.keys, NewPolicyCache(evict.Adaptive, 1000))
		tl := HitRatio(tc.keys, NewPolicyCache(evict.TinyLFU, 1000))
		t.Logf("%s: adaptive %.2f, tinylfu %.2f", tc.name, a, tl)
		if a-tl < tc.gain {
			t.Errorf("%s: adaptive %.2f − tinylfu %.2f = %+.2f, want ≥ %+.2f", tc.name, a, tl, a-tl, tc.gain)
		}
	}
}

// TestAdaptiveThroughTheEngineTracksThePolicy: the recommended policy
// driving a real engine (whose entries have sizes in bytes, not 1) hits,
// over a few runs, within two points of the policy alone on small caches
// whose miniature caches are exact. Ties in the window's duel once went to the window's
// entry whenever the window was short of its share by a byte, as an
// engine's window always is, and the engine lost 9 to 15 points on loops
// and Glimpse while the policy alone, whose entries fill the window
// exactly, did not.
func TestAdaptiveThroughTheEngineTracksThePolicy(t *testing.T) {
	loop := make([]uint64, 100_000)
	for i := range loop {
		loop[i] = uint64(i % 1000)
	}
	// Two working sets in turn, each a loop that fits: the second needs a
	// switch to a larger window.
	phases := make([]uint64, 0, 120_000)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 40_000 {
		phases = append(phases, uint64(i/3+r.IntN(40)))
	}
	for i := range 80_000 {
		phases = append(phases, 1<<40+uint64(i%700))
	}
	for _, tc := range []struct {
		name     string
		keys     []uint64
		capacity int
	}{
		{"loop of 1000 keys, 750 entries", loop, 750},
		{"sliding keys then a loop of 700, 1000 entries", phases, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := HitRatio(tc.keys, NewPolicyCache(evict.Adaptive, tc.capacity))
			// The engine seeds its hash at random: one run of 40 on the
			// second case fell 2.1 points below the policy (CI, 19:32
			// UTC 2026-12-04), where the others spread over 86.0-87.5
			// against the policy's 87.2; the mean of engineRuns runs
			// keeps the test to the regression it guards (9-15 points).
			const engineRuns = 5
			var eng float64
			for range engineRuns {
				ec, err := NewEngineCache(evict.Adaptive, tc.capacity, 0)
				if err != nil {
					t.Fatal(err)
				}
				eng += HitRatio(tc.keys, ec) / engineRuns
				ec.Close()
				if err := ec.Err(); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("policy %.2f, engine %.2f (mean of %d runs)", pol, eng, engineRuns)
			if math.Abs(eng-pol) > 2 {
				t.Errorf("engine %.2f, policy alone %.2f: differ by more than 2 points", eng, pol)
			}
		})
	}
}
