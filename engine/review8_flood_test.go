package engine

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tidekv/tide/evict"
)

// TestReview8MissFloodKeepsPoliciesConsistent floods a small shard's read
// log with misses of keys that are never written (from several
// goroutines, so stripes fill and readers drain them with TryLock), while
// other goroutines read-then-write (a Miss paired with its Add, delivered
// up to a drain late) and write keys never read (an Add with no Miss),
// under a byte cap that evicts on most writes: no panic, Check (with the
// policy's own invariants) passes during and after, and a key written
// then read often survives a flood of one-time writes. Hits and misses
// counted equal the reads made.
func TestReview8MissFloodKeepsPoliciesConsistent(t *testing.T) {
	for _, pol := range []evict.Spec{evict.TinyLFU, evict.Adaptive, evict.VolatileTinyLFU, evict.S3FIFO} {
		t.Run(pol.Name, func(t *testing.T) {
			const size = 100
			val := make([]byte, size-EntryOverhead-8)
			e, _ := newTest(t, Config{Shards: 1, MaxBytes: 400 * size, Policy: pol})
			iters := 3000
			if raceEnabled {
				iters = 800
			}
			var reads sync.Map
			var wg sync.WaitGroup
			errc := make(chan error, 8)
			count := func(g int, n int) {
				v, _ := reads.LoadOrStore(g, new(int))
				*v.(*int) += n
			}
			// Hot keys, written once and read by every goroutine.
			for i := range 20 {
				if _, _, err := e.SetWith(fmt.Sprintf("hot%04d", i), val, SetOptions{TTL: 1 << 40}); err != nil {
					t.Fatal(err)
				}
			}
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := 0
					for i := range iters {
						switch g {
						case 0, 1: // a flood of misses
							e.Get(fmt.Sprintf("absent-%d-%d", g, i))
							n++
						case 2: // cache-aside: a miss, then the write
							k := fmt.Sprintf("ca%05d", i)
							if _, ok := e.Get(k); !ok {
								e.SetWith(k, val, SetOptions{TTL: 1 << 40})
							}
							n++
						case 3: // writes never read
							e.SetWith(fmt.Sprintf("w%05d", i), val, SetOptions{TTL: 1 << 40})
						}
						e.Get(fmt.Sprintf("hot%04d", i%20))
						n++
						if i%200 == 0 {
							if err := e.Check(); err != nil {
								select {
								case errc <- err:
								default:
								}
								return
							}
						}
					}
					count(g, n)
				}()
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			mustCheck(t, e)
			total := 0
			reads.Range(func(_, v any) bool { total += *v.(*int); return true })
			st := e.Stats()
			if int(st.Hits+st.Misses) != total {
				t.Errorf("hits %d + misses %d = %d, want the %d reads made", st.Hits, st.Misses, st.Hits+st.Misses, total)
			}
			lost := 0
			for i := range 20 {
				if _, ok := e.TTL(fmt.Sprintf("hot%04d", i)); !ok {
					lost++
				}
			}
			if lost > 2 {
				t.Errorf("%d of 20 keys read %d times each were evicted by writes never read", lost, 4*iters/20)
			}
		})
	}
}
