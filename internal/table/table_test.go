package table

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

// modelTags is a small set of tags, so that probe sequences collide: runs
// of neighbours at the low end, in the middle and at the high end (whose
// clusters wrap from the last word to the first), and a few in between.
var modelTags = func() []uint32 {
	var tags []uint32
	for i := range uint32(8) {
		tags = append(tags, i, 1<<31+i, math.MaxUint32-i)
	}
	for i := range uint32(17) {
		tags = append(tags, (i+1)*(math.MaxUint32/18))
	}
	return tags
}()

// TestTableModel checks the table against a map of (tag, slot) pairs over
// random inserts, deletes, replaces and remaps, with tags drawn from a small set so
// that probe sequences collide and wrap.
func TestTableModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tab Table
		model := map[uint64]bool{} // tag<<32 | slot
		tags := rapid.SampledFrom(modelTags)
		slots := rapid.Uint32Range(0, 200)
		check := func(t *rapid.T) {
			if tab.Len() != len(model) {
				t.Fatalf("Len = %d, model %d", tab.Len(), len(model))
			}
			for p := range model {
				tag, slot := uint32(p>>32), uint32(p)
				if _, ok := tab.Find(tag, func(s uint32) bool { return s == slot }); !ok {
					t.Fatalf("(%d,%d) not found", tag, slot)
				}
			}
			n := 0
			tab.Each(func(tag, slot uint32) {
				n++
				if !model[uint64(tag)<<32|uint64(slot)] {
					t.Fatalf("Each yielded (%d,%d), not in model", tag, slot)
				}
			})
			if n != len(model) {
				t.Fatalf("Each yielded %d, model %d", n, len(model))
			}
			if err := tab.Check(); err != nil {
				t.Fatal(err)
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"insert": func(t *rapid.T) {
				tag, slot := tags.Draw(t, "tag"), slots.Draw(t, "slot")
				p := uint64(tag)<<32 | uint64(slot)
				if model[p] {
					return
				}
				tab.Insert(tag, slot)
				model[p] = true
			},
			"delete": func(t *rapid.T) {
				tag, slot := tags.Draw(t, "tag"), slots.Draw(t, "slot")
				p := uint64(tag)<<32 | uint64(slot)
				if got := tab.Delete(tag, slot); got != model[p] {
					t.Fatalf("Delete(%d,%d) = %v, model %v", tag, slot, got, model[p])
				}
				delete(model, p)
			},
			"replace": func(t *rapid.T) {
				tag, slot, to := tags.Draw(t, "tag"), slots.Draw(t, "slot"), slots.Draw(t, "to")
				p, q := uint64(tag)<<32|uint64(slot), uint64(tag)<<32|uint64(to)
				if !model[p] || model[q] {
					return
				}
				if !tab.Replace(tag, slot, to) {
					t.Fatalf("Replace(%d,%d,%d) failed", tag, slot, to)
				}
				delete(model, p)
				model[q] = true
			},
			"remap": func(t *rapid.T) {
				// A bijection of the slot range, so that pairs stay
				// distinct; the old array must not change.
				old := append([]uint64(nil), tab.Words()...)
				held := tab.Words()
				flip := func(v uint32) uint32 { return 200 - v }
				tab.Remap(flip)
				for i := range old {
					if held[i] != old[i] {
						t.Fatalf("Remap changed word %d of the old array: %x, was %x", i, held[i], old[i])
					}
				}
				next := map[uint64]bool{}
				for p := range model {
					next[p>>32<<32|uint64(flip(uint32(p)))] = true
				}
				model = next
			},
			"probe": func(t *rapid.T) {
				tag := tags.Draw(t, "tag")
				want := 0
				for p := range model {
					if uint32(p>>32) == tag {
						want++
					}
				}
				got := 0
				for i := tab.Start(tag); ; {
					if _, ok := tab.Next(tag, &i); !ok {
						break
					}
					got++
				}
				if got != want {
					t.Fatalf("probe of tag %d yielded %d slots, want %d", tag, got, want)
				}
				// The lock-free probe over the published words agrees.
				got = 0
				w := tab.Words()
				for i := Home(w, tag); ; {
					if _, ok := loadNext(w, tag, &i); !ok {
						break
					}
					got++
				}
				if got != want {
					t.Fatalf("loadNext probe of tag %d yielded %d slots, want %d", tag, got, want)
				}
			},
			"": check,
		})
	})
}

func TestEmptyTable(t *testing.T) {
	var tab Table
	if _, ok := tab.Find(1, func(uint32) bool { return true }); ok {
		t.Fatal("Find on empty table found something")
	}
	if tab.Delete(1, 1) || tab.Replace(1, 1, 2) {
		t.Fatal("Delete/Replace on empty table reported success")
	}
	i := tab.Start(7)
	if _, ok := tab.Next(7, &i); ok {
		t.Fatal("Next on empty table yielded")
	}
}

func BenchmarkFind(b *testing.B) {
	var tab Table
	const n = 1 << 16
	for i := range uint32(n) {
		tab.Insert(i*2654435761, i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := uint32(i%n) * 2654435761
		j := tab.Start(k)
		tab.Next(k, &j)
	}
}

// TestProbeStats: the probe measures count a word at its home as one
// probe, each word it was pushed past as one more, and a miss as the
// words up to the first empty one.
func TestProbeStats(t *testing.T) {
	var tab Table
	for i := range uint32(3) {
		tab.Insert(0, i) // tag 0: homes at word 0, stored at words 0, 1, 2
	}
	if total, longest := tab.ProbeStats(); total != 1+2+3 || longest != 3 {
		t.Fatalf("ProbeStats = %d, %d; want 6, 3", total, longest)
	}
	if n := tab.MissProbes(0); n != 4 {
		t.Fatalf("MissProbes(0) = %d, want 4 (three words and the empty one)", n)
	}
	// The last tag homes at the last word, which is empty.
	if h := Home(tab.Words(), math.MaxUint32); h != tab.Cap()-1 {
		t.Fatalf("Home(MaxUint32) = %d, want the last word %d", h, tab.Cap()-1)
	}
	if n := tab.MissProbes(math.MaxUint32); n != 1 {
		t.Fatalf("MissProbes(MaxUint32) = %d, want 1 (an empty home)", n)
	}
}

// TestLargeTableStaysNearItsLoadLimit: a large table is never much
// emptier than its 13/16 limit, whatever the number of entries it stopped
// growing at, so it costs at most about 11.4 bytes an entry (a
// power-of-two table cost up to 21).
func TestLargeTableStaysNearItsLoadLimit(t *testing.T) {
	var tab Table
	r := rand.New(rand.NewPCG(1, 2))
	for i := range uint32(300_000) {
		tab.Insert(r.Uint32(), i)
		if tab.Cap() < 16*growSteps {
			continue
		}
		if load := float64(tab.Len()) / float64(tab.Cap()); load < 0.68 || load > 0.8125 {
			t.Fatalf("%d entries in %d words: load %.3f, want within [0.68, 0.8125] (13/16 ÷ 9/8 = 0.72, less the allocator's page rounding)", tab.Len(), tab.Cap(), load)
		}
	}
}

// TestShrunkTableKeepsItsEntries: deleting most entries shrinks the table
// (to a load of about 3/8), and every remaining pair is still found.
func TestShrunkTableKeepsItsEntries(t *testing.T) {
	var tab Table
	r := rand.New(rand.NewPCG(3, 4))
	tags := make([]uint32, 100_000)
	for i := range tags {
		tags[i] = r.Uint32()
		tab.Insert(tags[i], uint32(i))
	}
	peak := tab.Cap()
	for i := range 95_000 {
		if !tab.Delete(tags[i], uint32(i)) {
			t.Fatalf("Delete(%d) = false", i)
		}
	}
	if tab.Cap() >= peak/2 {
		t.Fatalf("%d entries left in %d words (peak %d): did not shrink", tab.Len(), tab.Cap(), peak)
	}
	for i := 95_000; i < len(tags); i++ {
		if _, ok := tab.Find(tags[i], func(s uint32) bool { return s == uint32(i) }); !ok {
			t.Fatalf("(%d,%d) lost by the shrink", tags[i], i)
		}
	}
}

// TestLoadNextDuringMutation: a reader probing the published words with
// loadNext while one writer inserts (shifting clusters forward), deletes
// (shifting them back) and resizes never reads out of bounds, never loops
// past len(words) words, and races with nothing (run with -race); once the
// writer stops, every key the writer left is found.
func TestLoadNextDuringMutation(t *testing.T) {
	var tab Table
	var pub atomic.Pointer[[]uint64]
	publish := func() {
		w := tab.Words()
		if p := pub.Load(); p == nil || len(*p) != len(w) || (len(w) > 0 && &(*p)[0] != &w[0]) {
			pub.Store(&w)
		}
	}
	publish()
	const keys = 3000
	tags := make([]uint32, keys)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range tags {
		tags[i] = r.Uint32() >> uint(r.IntN(8)) // crowd the low end: long clusters
	}
	done := make(chan struct{})
	var probes atomic.Int64
	go func() {
		defer close(done)
		rr := rand.New(rand.NewPCG(9, 10))
		for probes.Load() >= 0 {
			w := *pub.Load()
			tag := tags[rr.IntN(keys)]
			n := 0
			for i := Home(w, tag); ; n++ {
				if _, ok := loadNext(w, tag, &i); !ok {
					break
				}
				if n > len(w) {
					t.Errorf("probe of %d words yielded more than %d slots", len(w), n)
					return
				}
			}
			probes.Add(1)
		}
	}()
	live := make([]bool, keys)
	for round := range 20 {
		for i := range keys {
			if (i+round)%3 == 0 && !live[i] {
				tab.Insert(tags[i], uint32(i))
				live[i] = true
			} else if (i+round)%5 == 0 && live[i] {
				tab.Delete(tags[i], uint32(i))
				live[i] = false
			}
			publish()
		}
	}
	for probes.Load() < 1000 {
		runtime.Gosched()
	}
	probes.Store(-1 << 40)
	<-done
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
	w := tab.Words()
	for i, ok := range live {
		if !ok {
			continue
		}
		found := false
		for j := Home(w, tags[i]); ; {
			s, more := loadNext(w, tags[i], &j)
			if !more {
				break
			}
			if s == uint32(i) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("key %d (tag %d) not found after the writer stopped", i, tags[i])
		}
	}
}

// loadNext is Next over words (from Words) read with atomic loads, as a
// reader that does not hold the writer's lock probes them (the engine's
// peek writes this loop inline). A probe under concurrent
// mutation may skip or repeat words; it gives up (false, with *i = -1)
// after len(words) words. Start the probe at Home(words, tag).
func loadNext(words []uint64, tag uint32, i *int) (uint32, bool) {
	if *i < 0 || *i >= len(words) {
		*i = -1
		return 0, false
	}
	j, n := *i, len(words)
	h := home(tag, n)
	for range n {
		w := atomic.LoadUint64(&words[j])
		if w == 0 {
			break
		}
		if uint32(w>>32) == tag {
			*i = Step(j, n)
			return uint32(w) - 1, true
		}
		if !Goes(w, tag, h, j, n) {
			break
		}
		j = Step(j, n)
	}
	*i = -1
	return 0, false
}
