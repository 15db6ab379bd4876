package table

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFullSaysExactlyWhenInsertGrows guards the load limit (13/16): at
// every size a table passes through while it grows to thousands of words
// and shrinks back to empty, Full reports true exactly when the next
// Insert grows the array, no insert or delete leaves the load above the
// limit (Check), and a Remap keeps it there.
func TestFullSaysExactlyWhenInsertGrows(t *testing.T) {
	var tab Table
	r := rand.New(rand.NewPCG(5, 6))
	type pair struct{ tag, v uint32 }
	var in []pair
	const n = 4000
	for i := range uint32(n) {
		full, before := tab.Full(), tab.Cap()
		p := pair{r.Uint32(), i}
		tab.Insert(p.tag, p.v)
		in = append(in, p)
		if grew := tab.Cap() != before; grew != full {
			t.Fatalf("insert %d into %d words: Full said %v, grew %v", i, before, full, grew)
		}
		if tab.Len()*maxLoadDen > tab.Cap()*maxLoadNum {
			t.Fatalf("insert %d: %d entries in %d words, above 13/16", i, tab.Len(), tab.Cap())
		}
		if i%97 == 0 || full {
			if err := tab.Check(); err != nil {
				t.Fatalf("insert %d: %v", i, err)
			}
		}
	}
	tab.Remap(func(v uint32) uint32 { return v + n })
	if err := tab.Check(); err != nil {
		t.Fatalf("after Remap: %v", err)
	}
	r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	for i, p := range in {
		before := tab.Cap()
		if !tab.Delete(p.tag, p.v+n) {
			t.Fatalf("delete %d: (%x, %d) not found", i, p.tag, p.v+n)
		}
		if shrunk := tab.Cap() != before; shrunk || i%97 == 0 {
			if err := tab.Check(); err != nil {
				t.Fatalf("delete %d (%d → %d words): %v", i, before, tab.Cap(), err)
			}
			if tab.Len() > 0 && tab.Full() && shrunk {
				t.Fatalf("delete %d: a shrink left the table full (%d in %d words)", i, tab.Len(), tab.Cap())
			}
		}
	}
	if tab.Len() != 0 || tab.Cap() != 0 {
		t.Fatalf("emptied table: %d entries in %d words", tab.Len(), tab.Cap())
	}
}

// inlineProbe is the lock-free reader's loop as the engine writes it
// inline (Home once, then Goes and Step, at most len(words) words): the
// values stored under tag, in probe order.
func inlineProbe(words []uint64, tag uint32) []uint32 {
	var vs []uint32
	n := len(words)
	home := Home(words, tag)
	for j, k := home, 0; k < n; k++ {
		w := words[j]
		if w == 0 {
			break
		}
		if uint32(w>>32) != tag {
			if !Goes(w, tag, home, j, n) {
				break
			}
			j = Step(j, n)
			continue
		}
		j = Step(j, n)
		vs = append(vs, uint32(w)-1)
	}
	return vs
}

// TestInlineProbeMatchesNext guards Home, Goes and Step, which let a
// reader write the probe inline: over tables of every size a growing and
// shrinking table passes through, with tags that collide and clusters
// that wrap, the inline loop yields exactly what Next yields for every
// tag, present or not; and on a table of one word (full, or holding
// another tag) it ends.
func TestInlineProbeMatchesNext(t *testing.T) {
	var tab Table
	r := rand.New(rand.NewPCG(7, 8))
	type pair struct{ tag, v uint32 }
	var in []pair
	compare := func(step int) {
		t.Helper()
		for _, tag := range modelTags {
			var want []uint32
			for i := tab.Start(tag); ; {
				v, ok := tab.Next(tag, &i)
				if !ok {
					break
				}
				want = append(want, v)
			}
			if got := inlineProbe(tab.Words(), tag); !slices.Equal(got, want) {
				t.Fatalf("step %d, %d words, tag %x: inline probe %v, Next %v", step, tab.Cap(), tag, got, want)
			}
		}
	}
	for i := range uint32(600) {
		p := pair{modelTags[r.IntN(len(modelTags))], i}
		tab.Insert(p.tag, p.v)
		in = append(in, p)
		compare(int(i))
	}
	r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	for i, p := range in {
		tab.Delete(p.tag, p.v)
		compare(600 + i)
	}
	for _, w := range []uint64{0, 5<<32 | 3, math.MaxUint32<<32 | 1} {
		for _, tag := range []uint32{0, 5, math.MaxUint32} {
			got := inlineProbe([]uint64{w}, tag)
			if want := w != 0 && uint32(w>>32) == tag; want != (len(got) == 1) || len(got) > 1 {
				t.Fatalf("one word %x, tag %x: %v", w, tag, got)
			}
		}
	}
}
