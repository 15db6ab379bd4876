package evict

import (
	"fmt"
	"strings"
)

// Specs lists every built-in policy, in the order Redis documents them,
// followed by tide's additions.
//
// Choosing a policy (hit ratios in bench/HITRATIO.md):
//
//   - Adaptive is the recommended choice for caches: W-TinyLFU whose
//     window and admission rule are picked by miniature simulations of the
//     candidates (one set per engine), so it follows the workload between
//     frequency and recency; the best mean hit ratio of the tide policies,
//     at or above otter's on 63 of the 76 rows of bench/HITRATIO.md and
//     within 0.3 points on 8 more (the report lists where it falls short). Its writes of sampled keys cost more than
//     TinyLFU's (the miniature caches' work); its memory is TinyLFU's plus
//     under a byte an entry at 1M entries (its doc has the figures).
//   - TinyLFU (W-TinyLFU with a hill-climbed window, Caffeine's and
//     otter's method): scan resistant, close to otter, O(1) reads and
//     writes, no miniature caches; the simpler choice.
//   - S3FIFO has the cheapest reads (a 2-bit counter) and
//     does well on recency-skewed workloads with one-hit wonders.
//   - AllKeysLRU / VolatileLRU: Redis's allkeys-lru, with exact order.
//   - AllKeysLFU / VolatileLFU: Redis's LFU with its log counter and decay.
//   - AllKeysRandom / VolatileRandom: O(1) everything, no read cost.
//   - VolatileTTL: evict what expires soonest.
//   - NoEviction: writes fail with the engine's ErrOutOfMemory when full.
//
// The volatile variants run the same algorithm; the engine only adds
// entries that have a TTL to them.
var Specs = []Spec{
	NoEviction,
	AllKeysLRU, AllKeysLFU, AllKeysRandom,
	VolatileLRU, VolatileLFU, VolatileRandom, VolatileTTL,
	TinyLFU, VolatileTinyLFU, S3FIFO, Adaptive,
}

// Parse returns the built-in Spec with the given name, as Redis spells
// maxmemory-policy values ("allkeys-lru", "volatile-ttl", ...) plus tide's
// "tinylfu", "volatile-tinylfu", "s3fifo" and "adaptive". Case and surrounding space are ignored.
// The empty name is NoEviction. An unknown name yields an error wrapping
// ErrUnknownPolicy.
func Parse(name string) (Spec, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return NoEviction, nil
	}
	switch n {
	case "w-tinylfu", "wtinylfu", "allkeys-tinylfu":
		n = "tinylfu"
	case "s3-fifo", "allkeys-s3fifo":
		n = "s3fifo"
	case "allkeys-adaptive":
		n = "adaptive"
	}
	for _, s := range Specs {
		if s.Name == n {
			return s, nil
		}
	}
	return Spec{}, fmt.Errorf("%w: %q", ErrUnknownPolicy, name)
}
