package engine

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tidekv/tide/evict"
)

// TestReview8EvictionFollowsReadsThroughTheReadLog guards the read log's
// drain (an empty stripe is skipped, not stored): reads made without the
// exclusive lock, by several goroutines and through every read API, must
// reach the policy, so that the keys read survive the evictions that the
// writes of new keys cause, under LRU (where the keys not read must be
// exactly the victims), TinyLFU and Adaptive. "full" fills the cap, so
// every hit is logged; "calm" leaves more than an eighth of it free while
// the keys are read, so the shard samples its hits (one in calmSample),
// and the hot keys are read often enough that each reaches the policy.
func TestReview8EvictionFollowsReadsThroughTheReadLog(t *testing.T) {
	const n = 256 // keys before the new ones
	val := make([]byte, 40)
	key := func(i int) string { return fmt.Sprintf("k%04d", i) }
	size := int64(len(key(0)) + len(val) + EntryOverhead)
	for _, pol := range []evict.Spec{evict.AllKeysLRU, evict.TinyLFU, evict.Adaptive} {
		for _, mode := range []string{"full", "calm"} {
			for _, readers := range []int{1, 4} {
				t.Run(fmt.Sprintf("%s/%s/%d-readers", pol.Name, mode, readers), func(t *testing.T) {
					capN := int64(n)
					if mode == "calm" {
						capN = 2 * n
					}
					var evicted []string
					e, _ := newTest(t, Config{Shards: 1, MaxBytes: capN * size, Policy: pol, OnRemove: func(r Removal) {
						if r.Cause == CauseEvicted {
							evicted = append(evicted, r.Key)
						}
					}})
					for i := range n {
						if _, err := e.Set(key(i), val); err != nil {
							t.Fatal(err)
						}
					}
					// A pass over every key (which makes a shard with
					// room calm: hits since it last grew ≥ its entries).
					for range 2 {
						for i := range n {
							e.Get(key(i))
						}
					}
					reads := 60
					if mode == "calm" {
						reads = 400 // each key reaches a calm shard's policy with probability 1-(15/16)^400
					}
					hot := func(i int) bool { return i%2 == 0 }
					var wg sync.WaitGroup
					for r := range readers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							var buf []byte
							for j := range reads / readers {
								for ii := range n {
									i := (ii + r*37) % n
									if !hot(i) {
										continue
									}
									switch (i + j) % 4 {
									case 0:
										e.Get(key(i))
									case 1:
										e.View(key(i), func([]byte) {})
									case 2:
										e.GetItem(key(i))
									case 3:
										buf, _ = e.AppendGet(buf[:0], key(i))
									}
								}
							}
						}()
					}
					wg.Wait()
					// New keys: fill what is free, then evict n/2.
					adds := int(capN) - n + n/2
					for i := range adds {
						if _, err := e.Set(key(n+i), val); err != nil {
							t.Fatal(err)
						}
					}
					mustCheck(t, e)
					lostHot, keptCold := 0, 0
					var lost []string
					for i := range n {
						_, ok := e.TTL(key(i)) // no access
						switch {
						case hot(i) && !ok:
							lostHot++
							lost = append(lost, fmt.Sprintf("%s (victim %d)", key(i), slices.Index(evicted, key(i))+1))
						case !hot(i) && ok:
							keptCold++
						}
					}
					if lostHot > 0 {
						t.Errorf("%d of %d keys read %d times since the others were last read were evicted (%d not read stayed): %v", lostHot, n/2, reads, keptCold, lost)
					}
					if pol.Name == evict.AllKeysLRU.Name && keptCold > 0 {
						t.Errorf("LRU kept %d keys not read since the hot ones were, and evicted %d hot ones", keptCold, lostHot)
					}
				})
			}
		}
	}
}

// TestReview8TinyLFUResistsAScanWhenItsWindowHoldsNoEntry: a shard whose
// cap is 50 entries of about 1 KiB has a TinyLFU window (1% of the cap)
// smaller than one entry; a scan of keys never read must still not evict
// the keys read 20 times each (see evict's
// TestReview8TinyLFUAdmitsWhenTheWindowHoldsNoEntry for the cause).
func TestReview8TinyLFUResistsAScanWhenItsWindowHoldsNoEntry(t *testing.T) {
	const n, hot = 50, 45
	val := make([]byte, 1000)
	key := func(i int) string { return fmt.Sprintf("k%04d", i) }
	size := int64(len(key(0)) + len(val) + EntryOverhead)
	for _, pol := range []evict.Spec{evict.TinyLFU, evict.Adaptive} {
		t.Run(pol.Name, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 1, MaxBytes: n * size, Policy: pol})
			for i := range n {
				if _, err := e.Set(key(i), val); err != nil {
					t.Fatal(err)
				}
			}
			for range 20 {
				for i := range hot {
					e.Get(key(i))
				}
			}
			for i := range 100 {
				if _, err := e.Set(key(n+i), val); err != nil {
					t.Fatal(err)
				}
			}
			mustCheck(t, e)
			var lost []string
			for i := range hot {
				if _, ok := e.TTL(key(i)); !ok {
					lost = append(lost, key(i))
				}
			}
			// Two may go: the sketch of a 50-entry shard is small, and a
			// newcomer whose counters collide with hot keys' can win a
			// duel (a different hash seed each run). Without a duel, the
			// hot keys in probation go one after another.
			if len(lost) > 2 {
				t.Errorf("a scan of 100 keys never read evicted %d of the %d keys read 20 times: %v", len(lost), hot, lost)
			}
		})
	}
}
