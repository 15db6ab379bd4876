package evict

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestReviewEvictModelAtTheEdges drives every policy with random
// operations whose arguments sit at the edges of the contract: sizes
// around the 16-bit node size and far above it, deadlines of 0, negative
// and math.MaxInt64, SetDeadline on tracked and untracked handles,
// handles on both sides of a page and of a (lowered) link width, clock
// readings at the ends of int64, and several shards of Adaptive sharing
// one group. After each step Check holds, Len counts the tracked handles
// and Victim returns one of them, exactly when there is one.
func TestReviewEvictModelAtTheEdges(t *testing.T) {
	old := linkLimit
	linkLimit = 1000
	defer func() { linkLimit = old }()
	sizes := []int64{math.MinInt64, -1, 0, 1, 2, sizeBig - 1, sizeBig, sizeBig + 1, 1 << 32, 1 << 40, math.MaxInt64 / 2, math.MaxInt64}
	deadlines := []int64{math.MinInt64, -1, 0, 1, 1e9, 1e12, math.MaxInt64 - 1, math.MaxInt64}
	handles := []Handle{0, 1, 2, 3, 998, 999, 1000, 1001, 1023, 1024, 1025, 2047, 2048, 3000}
	nows := []int64{math.MinInt64, -1, 0, 1, 60e9, 1e15, math.MaxInt64}
	for _, s := range evicting() {
		t.Run(s.Name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				capacity := rapid.SampledFrom([]int64{-1, 0, 1, 100, 1 << 20, math.MaxInt64}).Draw(t, "cap")
				nshards := rapid.IntRange(1, 3).Draw(t, "shards")
				ps := s.NewShards(nshards, capacity)
				live := make([]map[Handle]bool, nshards)
				for i := range live {
					live[i] = map[Handle]bool{}
				}
				pick := func(t *rapid.T) (Policy, map[Handle]bool) {
					i := rapid.IntRange(0, nshards-1).Draw(t, "shard")
					return ps[i], live[i]
				}
				entry := func(t *rapid.T) Entry {
					return Entry{
						Hash:     rapid.Uint64().Draw(t, "hash"),
						Size:     rapid.SampledFrom(sizes).Draw(t, "size"),
						Deadline: rapid.SampledFrom(deadlines).Draw(t, "deadline"),
					}
				}
				handle := rapid.SampledFrom(handles)
				t.Repeat(map[string]func(*rapid.T){
					"add": func(t *rapid.T) {
						p, l := pick(t)
						h := handle.Draw(t, "h")
						p.Add(h, entry(t))
						l[h] = true
					},
					"update": func(t *rapid.T) {
						p, l := pick(t)
						h := handle.Draw(t, "h")
						p.Update(h, entry(t))
						l[h] = true
					},
					"setdeadline": func(t *rapid.T) {
						p, _ := pick(t)
						if d, ok := p.(DeadlineSetter); ok {
							d.SetDeadline(handle.Draw(t, "h"), rapid.SampledFrom(deadlines).Draw(t, "deadline"))
						}
					},
					"remove": func(t *rapid.T) {
						p, l := pick(t)
						h := handle.Draw(t, "h")
						p.Remove(h)
						delete(l, h)
					},
					"access": func(t *rapid.T) {
						p, _ := pick(t)
						p.Access(handle.Draw(t, "h"))
					},
					"miss": func(t *rapid.T) {
						p, _ := pick(t)
						p.Miss(rapid.Uint64().Draw(t, "hash"))
					},
					"evict": func(t *rapid.T) {
						p, l := pick(t)
						h, ok := p.Victim(rapid.SampledFrom(nows).Draw(t, "now"))
						if ok != (len(l) > 0) {
							t.Fatalf("Victim ok = %v with %d live", ok, len(l))
						}
						if ok && !l[h] {
							t.Fatalf("Victim returned %d, not live (live %v)", h, l)
						}
						if ok && rapid.Bool().Draw(t, "remove victim") {
							p.Remove(h)
							delete(l, h)
						}
					},
					"": func(t *rapid.T) {
						for i, p := range ps {
							if err := Check(p); err != nil {
								t.Fatalf("shard %d: %v", i, err)
							}
							if n := p.(interface{ Len() int }).Len(); n != len(live[i]) {
								t.Fatalf("shard %d: Len = %d, want %d", i, n, len(live[i]))
							}
						}
					},
				})
			})
		})
	}
}
