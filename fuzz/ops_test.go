package fuzz

import (
	"testing"
)

// FuzzEngineOps runs an arbitrary stream of every engine operation against
// the reference model: writes with every option, CAS, deletes, reads,
// TTL changes with every condition, counters, transactions, clock jumps,
// expiry cycles, iteration and Close, on a small capped engine with one of
// the eviction policies. After every operation it compares the whole
// engine with the model (Items, Stats, Len) and runs Engine.Check.
func FuzzEngineOps(f *testing.F) {
	for _, s := range engineSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &in{b: data}
		h := newHarness(t, r)
		h.run(r, func(r *in) int { return int(r.u8()) % nOps })
	})
}

// engineSeeds are hand-written starting points; the committed corpus under
// testdata/fuzz/FuzzEngineOps adds the fuzzer's finds.
var engineSeeds = [][]byte{
	{},
	// 1 shard, cap 300, noeviction: sets until OOM, deletes, set again.
	{0x02, 0, 0, 1, 16, 0, 2, 16, 0, 3, 16, 0, 4, 16, 6, 1, 0, 4, 16},
	// 1 shard, cap 500, allkeys-lru: many sets force evictions.
	{0x14, 0, 0, 1, 6, 0, 2, 6, 0, 3, 6, 0, 4, 6, 0, 5, 6, 13, 1, 0, 1, 16},
	// volatile-ttl with TTL keys, clock jumps, expiry cycles.
	{0x74, 1, 1, 1, 3, 5, 1, 2, 3, 6, 1, 3, 3, 8, 21, 3, 23, 21, 5, 23, 13, 1},
	// counters: incr, overflow, not-integer.
	{0x00, 0, 17, 4, 0, 18, 4, 2, 18, 4, 2, 19, 4, 3, 0, 4, 14, 18, 4, 0},
	// CAS with current and stale versions, conditional sets.
	{0x00, 0, 0, 1, 2, 4, 1, 1, 2, 4, 1, 4, 2, 2, 1, 2, 0x48, 1, 5, 1, 4},
	// transactions.
	{0x02, 0, 20, 0x05, 1, 1, 1, 2, 1, 2, 20, 0x15, 1, 2, 2, 3, 0, 2, 4},
	// expire conditions and ExpireAt extremes.
	{0x00, 0, 1, 1, 2, 8, 9, 1, 7, 1, 9, 1, 1, 3, 10, 1, 3, 0, 10, 1, 4, 0, 10, 1, 2, 5, 2},
	// 4 shards, capped, allkeys-random.
	{0x37, 2, 0, 1, 16, 0, 2, 16, 0, 3, 16, 0, 4, 16, 0, 5, 16, 0, 0, 16},
	// end of time: clock near MaxInt64, TTLs overflow.
	{0x00, 0, 21, 7, 3, 1, 1, 2, 5, 9, 1, 5, 0, 8, 1, 9, 17, 1, 2, 6, 16, 1},
	// close mid-stream, then everything.
	{0x00, 0, 0, 1, 2, 25, 0xC1, 0, 1, 2, 13, 1, 23, 20, 0, 1, 1, 3},
}
