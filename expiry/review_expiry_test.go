package expiry

import (
	"math"
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
		item := func(t *rapid.T, label string) Item {
			return Item{Deadline: rapid.SampledFrom(deadlines).Draw(t, label+"d"), Slot: rapid.SampledFrom(slots).Draw(t, label+"s")}
		}
		now := func(t *rapid.T) int64 { return rapid.SampledFrom(deadlines).Draw(t, "now") }
		runIndexModel(t, item, now, func(x *Index, m *indexModel) map[string]func(*rapid.T) {
			return map[string]func(*rapid.T){
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
			}
		})
	})
}
