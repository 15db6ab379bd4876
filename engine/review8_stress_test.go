package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

// TestReview8ConcurrentOpsKeepCheck runs every operation at once from
// several goroutines on the keys of one or two small shards under a byte
// cap (evictions in most writes, a listener that writes back, pins, TTLs
// on a manual clock the goroutines advance, commits of several keys,
// Views whose fn writes the key it views, counters), with Engine.Check
// (the remembered slot word, the record triangle, the budget) run
// concurrently and after: every value read is whole, and Check passes.
func TestReview8ConcurrentOpsKeepCheck(t *testing.T) {
	for _, c := range []struct {
		shards int
		policy evict.Spec
	}{
		{1, evict.AllKeysLRU}, {2, evict.TinyLFU}, {1, evict.Adaptive}, {2, evict.VolatileTTL}, {1, evict.S3FIFO},
	} {
		t.Run(fmt.Sprintf("%s-%d", c.policy.Name, c.shards), func(t *testing.T) {
			var e *Engine
			var nextN atomic.Uint64
			var wb atomic.Int64
			e, clk := newTest(t, Config{Shards: c.shards, MaxBytes: 12 << 10, Policy: c.policy,
				OnRemove: func(r Removal) {
					if r.Cause == CauseEvicted && wb.Add(1)%8 == 0 {
						e.Set("wb", r8val(nextN.Add(1)))
					}
				}})
			keys := make([]string, 20)
			for i := range keys {
				keys[i] = fmt.Sprintf("c%02d", i)
			}
			ttls := []time.Duration{NoTTL, time.Millisecond, 5 * time.Millisecond}
			iters := 1500
			if raceEnabled {
				iters = 400
			}
			errc := make(chan error, 32)
			fail := func(format string, a ...any) {
				select {
				case errc <- fmt.Errorf(format, a...):
				default:
				}
			}
			okErr := func(err error) bool { return err == nil || errors.Is(err, ErrOutOfMemory) }
			whole := func(op, k string, v []byte) {
				if _, ok := r8whole(v); !ok {
					fail("%s(%s) = a value of %d bytes no write wrote whole", op, k, len(v))
				}
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var checks atomic.Int64
			started := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if i == 1 {
						close(started) // the workers start once a Check has run
					}
					select {
					case <-stop:
						return
					default:
					}
					if err := e.Check(); err != nil {
						fail("Check: %v", err)
						if i == 0 {
							close(started)
						}
						return
					}
					checks.Add(1)
					runtime.Gosched()
				}
			}()
			var workers sync.WaitGroup
			for g := range 4 {
				workers.Add(1)
				go func() {
					defer workers.Done()
					<-started
					rng := rand.New(rand.NewPCG(uint64(g), 88))
					ctr := fmt.Sprintf("ctr%d", g)
					for range iters {
						k := keys[rng.IntN(len(keys))]
						v := r8val(nextN.Add(1))
						switch rng.IntN(14) {
						case 0, 1, 2:
							o := SetOptions{TTL: ttls[rng.IntN(len(ttls))], Pin: rng.IntN(20) == 0}
							if rng.IntN(3) == 0 {
								o = SetOptions{KeepTTL: true}
							}
							if _, _, err := e.SetWith(k, v, o); !okErr(err) {
								fail("SetWith: %v", err)
							}
						case 3:
							e.Delete(k)
						case 4:
							e.Expire(k, ttls[1+rng.IntN(len(ttls)-1)], ExpireConditionAlways)
						case 5:
							e.Persist(k)
						case 6:
							it, ok, err := e.GetAndExpire(k, time.Millisecond)
							if err != nil {
								fail("GetAndExpire: %v", err)
							} else if ok {
								whole("GetAndExpire", k, it.Value)
							}
						case 7:
							e.Pin(k, rng.IntN(3) == 0)
						case 8:
							if _, err := e.IncrBy(ctr, int64(rng.IntN(1000000))-500000); !okErr(err) {
								fail("IncrBy: %v", err)
							}
						case 9:
							k2 := keys[rng.IntN(len(keys))]
							if k2 == k {
								continue
							}
							ops := []Op{{Key: k, Value: v, TTL: NoTTL}, {Key: k2, Delete: rng.IntN(2) == 0, Value: r8val(nextN.Add(1)), TTL: time.Millisecond}}
							if _, _, err := e.Commit(nil, ops); !okErr(err) {
								fail("Commit: %v", err)
							}
						case 10:
							e.View(k, func(cur []byte) {
								was := bytes.Clone(cur)
								whole("View", k, was)
								if rng.IntN(2) == 0 {
									e.SetWith(k, v, SetOptions{KeepTTL: true})
								}
								if !bytes.Equal(cur, was) {
									fail("View(%s): the value changed under fn", k)
								}
							})
						case 11:
							clk.Advance(time.Duration(rng.IntN(2)) * time.Millisecond)
							if rng.IntN(4) == 0 {
								e.RunExpiryCycle()
							}
						case 12:
							if it, ok := e.GetItem(k); ok {
								whole("GetItem", k, it.Value)
							}
						case 13:
							if got, ok := e.Get(k); ok {
								whole("Get", k, got)
							}
						}
					}
				}()
			}
			workers.Wait()
			close(stop)
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Error(err)
			}
			mustCheck(t, e)
			t.Logf("%d Checks ran", checks.Load())
			for k, it := range e.Items() {
				if k != "wb" && len(k) == 3 {
					whole("Items", k, it.Value)
				}
			}
		})
	}
}
