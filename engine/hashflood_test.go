package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/tidekv/tide/internal/table"
)

// Hash flooding: an attacker who knows the hash function picks keys offline
// that collide in the engine's structures. The engine's hash is seeded with
// a secret per engine, so keys picked against the unseeded xxhash (what the
// engine used to use, and what anybody can compute) behave like random
// keys. The measures are probe lengths and shard loads, not time.

// floodKeys returns n random keys (16 lowercase letters, from a fixed
// source) for which attack(xxhash.Sum64String(key)) holds; nil attack
// keeps every key.
func floodKeys(n int, src uint64, attack func(uint64) bool) []string {
	r := rand.New(rand.NewPCG(src, 1))
	keys := make([]string, 0, n)
	var b [16]byte
	for len(keys) < n {
		for i := range b {
			b[i] = 'a' + byte(r.IntN(26))
		}
		if attack == nil || attack(xxhash.Sum64(b[:])) {
			keys = append(keys, string(b[:]))
		}
	}
	return keys
}

// probeCost inserts keys into a fresh engine (cfg) and returns the mean
// probe length of the stored keys (the cost to find or insert one), the
// mean probe length of lookups of the absent keys misses, and the largest
// number of keys in one shard.
func probeCost(t *testing.T, cfg Config, keys, misses []string) (insert, miss float64, maxShard int) {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, k := range keys {
		if _, err := e.Set(k, nil); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i := range e.shards {
		s := &e.shards[i]
		n, _ := s.tab.ProbeStats()
		total += n
		maxShard = max(maxShard, s.tab.Len())
	}
	missTotal := 0
	for _, k := range misses {
		s, h := e.shardFor(k)
		missTotal += s.tab.MissProbes(table.Tag(h))
	}
	return float64(total) / float64(len(keys)), float64(missTotal) / float64(len(misses)), maxShard
}

// TestCraftedKeysCostLikeRandomKeys: keys crafted against the unseeded
// key hash insert, and make later misses of unrelated keys cost, within 2×
// of random keys, and do not crowd into one shard.
func TestCraftedKeysCostLikeRandomKeys(t *testing.T) {
	const n = 4096
	for _, tc := range []struct {
		name   string
		cfg    Config
		attack func(h uint64) bool // which unseeded hashes the attacker keeps (about 1 in 64)
	}{
		// The table's home word is the tag scaled to the table's length:
		// tags below 2^26 share the first 1/64 of the homes, whatever the
		// length, and pile up into long probe chains.
		{"one probe chain", Config{Shards: 1, ExpiryInterval: -1}, func(h uint64) bool { return table.Tag(h) < 1<<26 }},
		// The shard is the hash's low bits.
		{"one shard", Config{Shards: 64, ExpiryInterval: -1}, func(h uint64) bool { return h&63 == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			random := floodKeys(n, 1, nil)
			crafted := floodKeys(n, 2, tc.attack)
			misses := floodKeys(n, 3, nil)

			// The crafted keys are a real attack on an unseeded table.
			if tc.cfg.Shards == 1 {
				raw := func(keys []string) float64 {
					var tab table.Table
					for i, k := range keys {
						tab.Insert(table.Tag(xxhash.Sum64String(k)), uint32(i))
					}
					total, _ := tab.ProbeStats()
					return float64(total) / float64(len(keys))
				}
				if r, c := raw(random), raw(crafted); c < 4*r {
					t.Fatalf("crafted keys cost %.2f probes in an unseeded table, random %.2f: not an attack", c, r)
				}
			}

			rIns, rMiss, rShard := probeCost(t, tc.cfg, random, misses)
			cIns, cMiss, cShard := probeCost(t, tc.cfg, crafted, misses)
			t.Logf("random keys: %.2f probes an insert, %.2f a miss, %d in the fullest shard", rIns, rMiss, rShard)
			t.Logf("crafted keys: %.2f probes an insert, %.2f a miss, %d in the fullest shard", cIns, cMiss, cShard)
			if cIns > 2*rIns {
				t.Errorf("crafted keys cost %.2f probes an insert, random %.2f: more than 2×", cIns, rIns)
			}
			if cMiss > 2*rMiss {
				t.Errorf("after crafted keys a miss costs %.2f probes, after random %.2f: more than 2×", cMiss, rMiss)
			}
			if cShard > 2*rShard {
				t.Errorf("crafted keys put %d in one shard, random %d: more than 2×", cShard, rShard)
			}
		})
	}
}
