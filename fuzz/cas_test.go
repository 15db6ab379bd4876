package fuzz

import "testing"

// FuzzCASTxn is an op stream weighted towards versions: compare-and-swap,
// conditional sets (IfAbsent, IfPresent, IfVersion), compare-and-delete
// and multi-key transactions, with versions that are current, stale (the
// key was replaced, deleted, expired or evicted), another key's, or never
// existed; interleaved with expiry, clock jumps and eviction under a small
// cap. The model checks that a stale version never matches (no ABA), that
// a failed condition or transaction changes nothing, that versions only
// increase per key, and that a commit is all-or-nothing.
func FuzzCASTxn(f *testing.F) {
	for _, s := range casSeeds {
		f.Add(s)
	}
	casOps := []int{2, 3, 4, 4, 4, 5, 5, 20, 20, 20, 20, 0, 1, 6, 7, 13, 15, 9, 21, 21, 23, 12, 17}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &in{b: data}
		h := newHarness(t, r)
		h.run(r, func(r *in) int { return casOps[int(r.u8())%len(casOps)] })
	})
}

var casSeeds = [][]byte{
	{},
	// set, CAS with the current version, CAS with the stale one.
	{0x00, 0, 11, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 4, 1, 4, 2},
	// transactions with preconditions on current and stale versions.
	{0x02, 0, 7, 0x0d, 1, 1, 1, 1, 2, 1, 2, 3, 7, 0x1e, 1, 4, 2, 1, 3, 0, 8, 2},
	// delete, recreate, CAS with the old version (ABA).
	{0x00, 0, 11, 1, 2, 13, 1, 11, 1, 2, 2, 1, 4, 2},
	// capped with eviction, 4 shards.
	{0x35, 1, 7, 0x3f, 1, 1, 2, 16, 2, 2, 16, 3, 3, 16, 4, 4, 16, 7, 0x3f, 5, 2, 16, 6, 2, 16},
}
