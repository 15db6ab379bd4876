package bench

import (
	"flag"
	"sync"
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

// keeper is a Cache that keeps the slices and key strings it is given
// (as otter does) in preallocated tables, and allocates only if alloc is
// set. mu makes it safe for RunMix's goroutines.
type keeper struct {
	mu    sync.Mutex
	index map[string]int
	vals  [][]byte
	keys  []string // the key string each write was given
	read  []string // the key string each read was given
	alloc bool
}

func (c *keeper) Get(dst []byte, key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.index[key]
	if !ok {
		return dst, false
	}
	c.read[i] = key
	return c.vals[i], c.vals[i] != nil
}
func (c *keeper) Set(key string, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.index[key]
	c.vals[i], c.keys[i] = v, key
	if c.alloc {
		sink.Add(int64(len(append([]byte(nil), v...))))
	}
}
func (c *keeper) SetTTL(key string, v []byte, _ time.Duration) { c.Set(key, v) }
func (c *keeper) Len() int                                     { return len(c.index) }
func (c *keeper) Flush()                                       {}
func (c *keeper) Close()                                       {}

// TestRunMixWritesFreshValuesAndCountsOnlyTheCachesAllocations: Fill and
// a mix's writes hand the cache Stored's strings and reads Keys' (same
// bytes, other memory); a write hands over a fresh copy of a value, in
// memory of its own (Shared's writes hand over Values[0] itself, and its
// stored keys are the lookup strings); allocs/op counts the cache's
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
		shared     bool
	}{
		{"fresh values, cache allocates nothing", d, false, 0, false},
		{"fresh values, cache allocates once a write", d, true, 0.5, false},
		{"shared dataset", d.Shared(), false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(d.Keys)
			c := &keeper{index: map[string]int{}, vals: make([][]byte, n), keys: make([]string, n), read: make([]string, n), alloc: tc.alloc}
			for i, k := range d.Keys {
				c.index[k] = i
			}
			Fill(c, tc.d.Stored, tc.d.Values, false)
			for i := range c.keys {
				if unsafe.StringData(c.keys[i]) != unsafe.StringData(tc.d.Stored[i]) {
					t.Fatalf("Fill gave key %d a string other than Stored[%d]", i, i)
				}
			}
			r := testing.Benchmark(func(b *testing.B) { RunMix(b, c, tc.d, tc.d.Keys, 50, false, ReadAppend) })
			if got := r.Extra["allocs/op"]; got < tc.wantAllocs-0.05 || got > tc.wantAllocs+0.05 {
				t.Errorf("allocs/op = %.3f, want %.2f", got, tc.wantAllocs)
			}
			fresh, reads := 0, 0
			for i, v := range c.vals {
				if string(v) != string(d.Values[0]) && string(v) != string(d.Values[i]) {
					t.Fatalf("key %d holds %q, want its value or the template's", i, v)
				}
				if unsafe.SliceData(v) != unsafe.SliceData(tc.d.Values[i]) {
					fresh++
				}
				if wantShared := tc.shared; (unsafe.StringData(c.keys[i]) == unsafe.StringData(d.Keys[i])) != wantShared {
					t.Fatalf("key %d was written under the lookup string: %v, want %v", i, !wantShared, wantShared)
				}
				if c.read[i] != "" {
					reads++
					if unsafe.StringData(c.read[i]) != unsafe.StringData(d.Keys[i]) {
						t.Fatalf("key %d was read with a string other than Keys[%d]", i, i)
					}
				}
			}
			if reads == 0 {
				t.Fatal("no read reached the cache")
			}
			switch {
			case tc.shared && fresh != 0:
				t.Errorf("shared dataset: %d keys hold a copy, want Values[0] itself", fresh)
			case !tc.shared && fresh == 0:
				t.Error("no write handed over a fresh copy")
			}
		})
	}
}
