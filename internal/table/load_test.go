package table

import (
	"math/rand/v2"
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
