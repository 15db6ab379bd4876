package expiry

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestReviewExpiryIndexAtTheEndsOfInt64 is TestIndexMatchesSortedSet with
// deadlines and slots at the ends of their types and many equal deadlines
// (long runs of one deadline over many slots), and pops, counts and
// ascents at clock readings at the ends of int64.
func TestReviewExpiryIndexAtTheEndsOfInt64(t *testing.T) {
	deadlines := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
	slots := []uint32{0, 1, math.MaxUint32 - 1, math.MaxUint32}
	rapid.Check(t, func(t *rapid.T) {
		x, m := NewIndex(), indexModel{}
		item := func(label string) Item {
			return Item{Deadline: rapid.SampledFrom(deadlines).Draw(t, label+"d"), Slot: rapid.SampledFrom(slots).Draw(t, label+"s")}
		}
		now := func(t *rapid.T) int64 { return rapid.SampledFrom(deadlines).Draw(t, "now") }
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				it := item("add")
				x.Add(it)
				m.add(it)
			},
			"addSameDeadline": func(t *rapid.T) {
				d := rapid.SampledFrom(deadlines).Draw(t, "d")
				n := rapid.IntRange(1, 300).Draw(t, "n")
				down := rapid.Bool().Draw(t, "down")
				for i := range n {
					s := uint32(i * 3)
					if down {
						s = math.MaxUint32 - uint32(i*3)
					}
					it := Item{Deadline: d, Slot: s}
					x.Add(it)
					m.add(it)
				}
			},
			"remove": func(t *rapid.T) {
				it := item("rm")
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
			},
		})
	})
}
