package bench

import (
	"testing"
	"unsafe"
)

// TestThroughputGivesEachEntryMemoryOfItsOwn: the cache is given keys that
// are not the strings reads look up with (same bytes, other memory) and a
// value of its own per entry; Shared is the older dataset, one value for
// all and the stored keys the lookup strings.
func TestThroughputGivesEachEntryMemoryOfItsOwn(t *testing.T) {
	d := Throughput(1000)
	seen := map[*byte]int{}
	for i, k := range d.Keys {
		s := d.Stored[i]
		if s != k {
			t.Fatalf("Stored[%d] = %q, want %q", i, s, k)
		}
		if unsafe.StringData(s) == unsafe.StringData(k) {
			t.Fatalf("Stored[%d] shares Keys[%d]'s memory", i, i)
		}
		v := d.Values[i]
		if string(v) != string(Value(i)) {
			t.Fatalf("Values[%d] = %q, want Value(%d)", i, v, i)
		}
		if j, dup := seen[unsafe.SliceData(v)]; dup {
			t.Fatalf("Values[%d] shares Values[%d]'s memory", i, j)
		}
		seen[unsafe.SliceData(v)] = i
	}
	sh := d.Shared()
	for i := range d.Keys {
		if unsafe.StringData(sh.Stored[i]) != unsafe.StringData(d.Keys[i]) || unsafe.SliceData(sh.Values[i]) != unsafe.SliceData(d.Values[0]) {
			t.Fatalf("Shared entry %d: stored key or value not the shared one", i)
		}
	}
	if unsafe.StringData(d.Stored[0]) == unsafe.StringData(d.Keys[0]) {
		t.Fatal("Shared changed the dataset it was made from")
	}
}
