package expiry

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// indexModel is the obvious ordered set: a sorted slice.
type indexModel []Item

func (m *indexModel) add(it Item) {
	if i, ok := slices.BinarySearchFunc(*m, it, compare); !ok {
		*m = slices.Insert(*m, i, it)
	}
}

func (m *indexModel) remove(it Item) bool {
	i, ok := slices.BinarySearchFunc(*m, it, compare)
	if ok {
		*m = slices.Delete(*m, i, i+1)
	}
	return ok
}

func (x *Index) items() []Item {
	var got []Item
	x.Ascend(func(it Item) bool { got = append(got, it); return true })
	return got
}

// TestIndexMatchesSortedSet drives the chunked index and a sorted slice
// with the same operations, in the shapes that stress chunks: runs of
// increasing deadlines (chunks fill and new ones start), decreasing ones
// (every item goes before the first), and random ones (splits), interleaved
// with pops, removals of present, popped and absent items, and clears. The
// index must hold exactly the model's items, pop them in order, and keep
// its invariants after every operation.
func TestIndexMatchesSortedSet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		item := func(t *rapid.T, label string) Item {
			return Item{Deadline: rapid.Int64Range(0, 400).Draw(t, label+"d"), Slot: uint32(rapid.IntRange(0, 3).Draw(t, label+"s"))}
		}
		now := func(t *rapid.T) int64 { return rapid.Int64Range(-10, 500).Draw(t, "now") }
		runIndexModel(t, item, now, func(x *Index, m *indexModel) map[string]func(*rapid.T) {
			return map[string]func(*rapid.T){
				"addRun": func(t *rapid.T) {
					start := item(t, "run")
					n := rapid.IntRange(1, 200).Draw(t, "n")
					step := rapid.SampledFrom([]int64{1, -1, 3, -7}).Draw(t, "step")
					for i := range n {
						it := Item{Deadline: start.Deadline + int64(i)*step, Slot: start.Slot}
						x.Add(it)
						m.add(it)
					}
				},
			}
		})
	})
}

// runIndexModel drives a new index and its model with the same operations
// (adds, removals of present and absent items, pops, counts and ascents of
// due items at now's readings, clears, and extra's), items drawn by item,
// and checks after every operation that the index holds exactly the
// model's items, in order, with its invariants.
func runIndexModel(t *rapid.T, item func(t *rapid.T, label string) Item, now func(t *rapid.T) int64, extra func(x *Index, m *indexModel) map[string]func(*rapid.T)) {
	x, m := NewIndex(), indexModel{}
	ops := map[string]func(*rapid.T){
		"add": func(t *rapid.T) {
			it := item(t, "add")
			x.Add(it)
			m.add(it)
		},
		"remove": func(t *rapid.T) {
			it := item(t, "rm")
			if len(m) > 0 && rapid.Bool().Draw(t, "present") {
				it = m[rapid.IntRange(0, len(m)-1).Draw(t, "i")]
			}
			if got, want := x.Remove(it), m.remove(it); got != want {
				t.Fatalf("Remove(%v) = %v, want %v", it, got, want)
			}
		},
		"popDue": func(t *rapid.T) {
			n := now(t)
			for k := rapid.IntRange(1, 100).Draw(t, "k"); k > 0; k-- {
				it, ok := x.PopDue(n)
				wantOK := len(m) > 0 && m[0].Deadline <= n
				if ok != wantOK || (ok && it != m[0]) {
					t.Fatalf("PopDue(%d) = %v,%v; model's first %v", n, it, ok, m[:min(len(m), 3)])
				}
				if !ok {
					break
				}
				m = m[1:]
			}
		},
		"countDue": func(t *rapid.T) {
			n := now(t)
			want := 0
			for _, it := range m {
				if it.Deadline <= n {
					want++
				}
			}
			if got := x.CountDue(n); got != want {
				t.Fatalf("CountDue(%d) = %d want %d", n, got, want)
			}
			var got []Item
			x.AscendDue(n, func(it Item) bool { got = append(got, it); return true })
			if !slices.Equal(got, m[:want]) {
				t.Fatalf("AscendDue(%d) = %d items, want %d", n, len(got), want)
			}
		},
		"clear": func(t *rapid.T) {
			if rapid.IntRange(0, 20).Draw(t, "c") == 0 {
				x.Clear()
				m = nil
			}
		},
		"": func(t *rapid.T) {
			if err := x.Check(); err != nil {
				t.Fatal(err)
			}
			if x.Len() != len(m) {
				t.Fatalf("Len = %d want %d", x.Len(), len(m))
			}
			if got := x.items(); !slices.Equal(got, m) {
				t.Fatalf("items differ: got %d want %d", len(got), len(m))
			}
			it, ok := x.Min()
			if ok != (len(m) > 0) || (ok && it != m[0]) {
				t.Fatalf("Min = %v,%v want first of %v", it, ok, m[:min(len(m), 3)])
			}
		},
	}
	for name, op := range extra(x, &m) {
		ops[name] = op
	}
	t.Repeat(ops)
}

// TestIndexAddBeforeEveryItemIntoAFullFirstChunk guards the chunk that must
// be refiled when an item precedes every key: a full first chunk gets a new
// chunk before it, a first chunk with room takes the item and the new key.
func TestIndexAddBeforeEveryItemIntoAFullFirstChunk(t *testing.T) {
	x := NewIndex()
	for i := range 3 * chunkCap {
		x.Add(Item{Deadline: int64(1000 - i)})
		if err := x.Check(); err != nil {
			t.Fatalf("after %d adds: %v", i+1, err)
		}
	}
	for i := range 3 * chunkCap {
		it, ok := x.PopDue(1 << 40)
		if want := int64(1000 - 3*chunkCap + 1 + i); !ok || it.Deadline != want {
			t.Fatalf("pop %d = %v,%v want deadline %d", i, it, ok, want)
		}
	}
	if x.Len() != 0 || x.t.Len() != 0 {
		t.Fatalf("Len %d with %d chunks after popping everything", x.Len(), x.t.Len())
	}
}

// TestIndexRemovalsDoNotLeaveSparseChunks guards the index's memory under
// removals: removing most items, in any order, must merge the chunks they
// leave nearly empty instead of keeping a 1 KiB chunk per few items.
func TestIndexRemovalsDoNotLeaveSparseChunks(t *testing.T) {
	for _, keepEvery := range []int{2, 7, 20, 63} {
		x := NewIndex()
		const n = 100 * chunkCap
		for i := range n {
			x.Add(Item{Deadline: int64(i)})
		}
		for i := n - 1; i >= 0; i-- { // from the back, then the front
			if i%keepEvery != 0 && i%2 == 0 {
				x.Remove(Item{Deadline: int64(i)})
			}
		}
		for i := range n {
			if i%keepEvery != 0 && i%2 == 1 {
				x.Remove(Item{Deadline: int64(i)})
			}
		}
		if err := x.Check(); err != nil {
			t.Fatal(err)
		}
		if want := (n + keepEvery - 1) / keepEvery; x.Len() != want {
			t.Fatalf("keep every %d: Len %d want %d", keepEvery, x.Len(), want)
		}
		if limit := x.Len()/(chunkCap/8) + 1; x.t.Len() > limit {
			t.Fatalf("keep every %d: %d items in %d chunks, want at most %d chunks", keepEvery, x.Len(), x.t.Len(), limit)
		}
	}
}
