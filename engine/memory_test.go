package engine

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"testing"

	"github.com/tidekv/tide/evict"
)

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestEntryOverheadMatchesHeap measures the real heap cost of entries and
// checks that the accounted bytes (key + value + EntryOverhead) stay within
// ±15% of the heap growth, for 1M entries of 16-byte keys and 64-byte values
// (the reference point of the memory budget) and for larger values, without
// a cap and under a cap 1.5× the entries' accounted bytes with the
// recommended policy (evict.Adaptive, whose per-entry state EntryOverhead
// does not count: the cap stays honest only while that state is small).
//
//	TIDE_HEAP=1 go test ./engine -run TestEntryOverheadMatchesHeap -v
func TestEntryOverheadMatchesHeap(t *testing.T) {
	if os.Getenv("TIDE_HEAP") == "" {
		t.Skip("heap measurement (fills 1M entries): opt-in with TIDE_HEAP=1")
	}
	if raceEnabled {
		t.Skip("measures the heap; the race detector inflates it and the time (CI runs it without -race)")
	}
	tests := []struct {
		n, vlen int
		capped  bool
	}{
		{1_000_000, 64, false},
		{300_000, 1000, false},
		{1_000_000, 64, true},
		{300_000, 1000, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n=%d,value=%d,capped=%v", tt.n, tt.vlen, tt.capped), func(t *testing.T) {
			keys := make([]string, tt.n)
			for i := range keys {
				keys[i] = fmt.Sprintf("key:%012d", i) // 16 bytes
			}
			val := make([]byte, tt.vlen)
			before := heapInUse()
			cfg := Config{ExpiryInterval: -1}
			if tt.capped {
				cfg.MaxBytes = int64(1.5 * float64(tt.n) * float64(16+tt.vlen+EntryOverhead))
				cfg.Policy = evict.Adaptive
			}
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if _, err := e.Set(k, val); err != nil {
					t.Fatal(err)
				}
			}
			after := heapInUse()
			st := e.Stats()
			if st.Entries != tt.n {
				t.Fatalf("%d entries resident, want %d", st.Entries, tt.n)
			}
			growth := float64(after - before)
			perEntry := growth/float64(tt.n) - float64(16+tt.vlen)
			ratio := float64(st.Bytes) / growth
			t.Logf("heap growth %.1f MiB, accounted %.1f MiB (ratio %.3f); real overhead %.1f B/entry beyond key+value; EntryOverhead = %d",
				growth/(1<<20), float64(st.Bytes)/(1<<20), ratio, perEntry, EntryOverhead)
			if math.Abs(ratio-1) > 0.15 {
				t.Errorf("accounted/heap = %.3f, want within ±15%%", ratio)
			}
			runtime.KeepAlive(keys)
			e.Close()
		})
	}
}
