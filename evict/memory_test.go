package evict

import (
	"runtime"
	"testing"
	"unsafe"
)

// memoryShape is the per-shard share of the bench's memory configuration
// (bench/cmd/memory, tide-capped): 1M entries of 16-byte keys and 64-byte
// values (144 accounted bytes with the engine's 64 of overhead) spread
// over 64 shards by the hash's low bits, under a cap 1.5× their size. The
// test runs a quarter of the shards.
const (
	memShards  = 16
	memEntries = 1_000_000 / 64 * memShards
	memSize    = 16 + 64 + 64
)

// heapBytes returns the live heap after a full collection.
func heapBytes() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// policyBytesPerEntry builds memShards instances of spec as the engine
// does (NewShards), fills them as the engine would (dense handles per
// shard, hashes whose low bits pick the shard), then replaces half the
// entries through Victim and Remove (so that ghost queues fill), and
// returns the heap the policies hold per entry.
func policyBytesPerEntry(spec Spec) float64 {
	hint := int64(1.5*memEntries*memSize) / memShards
	before := heapBytes()
	ps := spec.NewShards(memShards, hint)
	next := make([]Handle, memShards)
	r := rng{s: 1}
	for range memEntries {
		h := r.next()
		s := h % memShards
		ps[s].Add(next[s], Entry{Hash: h, Size: memSize, Deadline: int64(h >> 1)})
		next[s]++
	}
	for i := range memEntries / 2 {
		s := i % memShards
		v, ok := ps[s].Victim(int64(i))
		if !ok {
			panic("no victim")
		}
		ps[s].Remove(v)
		ps[s].Add(v, Entry{Hash: r.next()&^(memShards-1) | uint64(s), Size: memSize, Deadline: int64(i)})
	}
	after := heapBytes()
	runtime.KeepAlive(ps)
	return float64(after-before) / memEntries
}

// TestPolicyMemoryPerEntry guards each policy's memory per tracked entry
// (its documented cost) in the shape the bench measures: the per-entry
// state, the sketch and ghost structures, array growth slack, and the
// fixed per-shard buffers and the state the shards share (Adaptive's
// miniature caches, one set for all the shards, as the engine builds
// them) amortized over the entries.
func TestPolicyMemoryPerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 250k entries")
	}
	budgets := map[string]float64{
		"tinylfu": 30, "volatile-tinylfu": 30, "adaptive": 34,
		"allkeys-lru": 21, "volatile-lru": 21,
		"allkeys-lfu": 16, "volatile-lfu": 16,
		"allkeys-random": 11, "volatile-random": 11,
		"volatile-ttl": 21, "s3fifo": 31,
	}
	for _, spec := range evicting() {
		t.Run(spec.Name, func(t *testing.T) {
			budget, ok := budgets[spec.Name]
			if !ok {
				t.Fatalf("no memory budget for %s", spec.Name)
			}
			got := policyBytesPerEntry(spec)
			t.Logf("%s: %.1f bytes per entry (budget %.0f)", spec.Name, got, budget)
			if got > budget {
				t.Errorf("%s holds %.1f bytes per entry, budget %.0f", spec.Name, got, budget)
			}
		})
	}
}

// The per-shard policies padded to whole cache lines (lruPolicy,
// ttlPolicy) are, on every architecture, so that two shards' policies,
// written under different locks, never share a line.
func TestShardPoliciesFillWholeLines(t *testing.T) {
	tests := []struct {
		name string
		size uintptr
	}{
		{"lruPolicy", unsafe.Sizeof(lruPolicy{})},
		{"ttlPolicy", unsafe.Sizeof(ttlPolicy{})},
	}
	for _, tt := range tests {
		if tt.size%64 != 0 {
			t.Errorf("%s is %d bytes, want a multiple of 64", tt.name, tt.size)
		}
	}
}

// The adaptive group's mutex and miniature caches, written at sampled
// references, are a line away from the fields every reference reads.
func TestAdaptiveGroupKeepsItsLockOffTheReadLine(t *testing.T) {
	var g adaptiveGroup
	read := unsafe.Offsetof(g.cur) + unsafe.Sizeof(g.cur)
	for name, off := range map[string]uintptr{"mu": unsafe.Offsetof(g.mu), "sims": unsafe.Offsetof(g.sims)} {
		if off < read+64 {
			t.Errorf("adaptiveGroup.%s at offset %d, want ≥ %d (64 bytes past cur)", name, off, read+64)
		}
	}
}
