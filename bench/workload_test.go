package bench

import (
	"flag"
	"testing"
	"time"
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

// keeper is a Cache that keeps the slices it is given (as otter does) in a
// preallocated table and allocates only if alloc is set.
type keeper struct {
	index map[string]int
	vals  [][]byte
	alloc bool
}

func (c *keeper) Get(dst []byte, key string) ([]byte, bool) {
	i, ok := c.index[key]
	if !ok {
		return dst, false
	}
	return c.vals[i], true
}
func (c *keeper) Set(key string, v []byte) {
	c.vals[c.index[key]] = v
	if c.alloc {
		sink.Add(int64(len(append([]byte(nil), v...))))
	}
}
func (c *keeper) SetTTL(key string, v []byte, _ time.Duration) { c.Set(key, v) }
func (c *keeper) Len() int                                     { return len(c.index) }
func (c *keeper) Flush()                                       {}
func (c *keeper) Close()                                       {}

// TestRunMixWritesFreshValuesAndCountsOnlyTheCachesAllocations: a write
// hands the cache a copy of Values[k] in memory of its own (Shared's
// writes hand Values[k] itself), and allocs/op counts the cache's
// allocations, not the copies.
func TestRunMixWritesFreshValuesAndCountsOnlyTheCachesAllocations(t *testing.T) {
	d := Throughput(1000)
	bt := flag.Lookup("test.benchtime")
	defer bt.Value.Set(bt.Value.String())
	bt.Value.Set("20000x")
	for _, tc := range []struct {
		name       string
		d          *Dataset
		alloc      bool
		wantAllocs float64 // per op, at 50% writes
		wantFresh  bool
	}{
		{"fresh values, cache allocates nothing", d, false, 0, true},
		{"fresh values, cache allocates once a write", d, true, 0.5, true},
		{"shared dataset", d.Shared(), false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &keeper{index: map[string]int{}, vals: make([][]byte, len(d.Keys)), alloc: tc.alloc}
			for i, k := range d.Keys {
				c.index[k] = i
			}
			r := testing.Benchmark(func(b *testing.B) { RunMix(b, c, tc.d, tc.d.Keys, 50, false, ReadAppend) })
			if got := r.Extra["allocs/op"]; got < tc.wantAllocs-0.05 || got > tc.wantAllocs+0.05 {
				t.Errorf("allocs/op = %.3f, want %.2f", got, tc.wantAllocs)
			}
			written := 0
			for i, v := range c.vals {
				if v == nil {
					continue
				}
				written++
				if string(v) != string(tc.d.Values[i]) {
					t.Fatalf("key %d holds %q, want %q", i, v, tc.d.Values[i])
				}
				if fresh := unsafe.SliceData(v) != unsafe.SliceData(tc.d.Values[i]); fresh != tc.wantFresh {
					t.Fatalf("key %d: value in memory of its own %v, want %v", i, fresh, tc.wantFresh)
				}
			}
			if written == 0 {
				t.Fatal("no write reached the cache")
			}
		})
	}
}
