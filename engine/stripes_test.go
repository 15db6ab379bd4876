package engine

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

// No stripe shares the first line of its structure, which the nil check of
// every method call on a pointer to it loads (see lineGuard): the first
// field is a lineGuard and every other field starts at least 64 bytes in.
func TestStripesLeaveTheFirstLineAlone(t *testing.T) {
	for _, v := range []any{readCounts{}, readLog{}, viewCounts{}} {
		ty := reflect.TypeOf(v)
		if f := ty.Field(0); f.Type != reflect.TypeOf(lineGuard{}) {
			t.Errorf("%s: first field %s is a %s, want a lineGuard", ty.Name(), f.Name, f.Type)
		}
		for i := 1; i < ty.NumField(); i++ {
			if f := ty.Field(i); f.Offset < 64 {
				t.Errorf("%s.%s at offset %d, want ≥ 64", ty.Name(), f.Name, f.Offset)
			}
		}
	}
	// The clock guard, written at nearly every reading of a clock not known
	// monotonic, is not on a line of the fields every operation reads.
	hot := reflect.TypeFor[Engine]()
	hwm, _ := hot.FieldByName("hwm")
	for _, name := range []string{"shards", "b", "mask", "seed", "clock", "mono", "maxKey", "closed", "dur"} {
		f, ok := hot.FieldByName(name)
		if !ok {
			t.Fatalf("Engine has no field %s", name)
		}
		if hwm.Offset < f.Offset+f.Type.Size()+64 {
			t.Errorf("Engine.hwm at %d, within a line of %s (ends at %d)", hwm.Offset, name, f.Offset+f.Type.Size())
		}
	}
}

// procStripe names the caller's P: below GOMAXPROCS, and different for two
// goroutines that hold their Ps at the same time.
func TestProcStripeIsTheP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	procs := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var bad atomic.Uint32
	for range 4 * procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if r := procStripe(); int(r) >= procs {
					bad.Store(r + 1)
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	if r := bad.Load(); r != 0 {
		t.Fatalf("procStripe() = %d, want < GOMAXPROCS = %d", r-1, procs)
	}

	// Two goroutines, each pinned to its P (so neither can be moved or
	// share it) until both have read their stripe, must read two stripes.
	// A pinned goroutine cannot be preempted, so each waits a bounded time
	// for the other; a round where the two did not overlap is retried.
	for try := 0; ; try++ {
		var arrived atomic.Int32
		var got [2]uint32
		var overlapped [2]bool
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				procPin()
				got[i] = procStripe()
				arrived.Add(1)
				for deadline := time.Now().Add(10 * time.Millisecond); arrived.Load() < 2 && time.Now().Before(deadline); {
				}
				overlapped[i] = arrived.Load() == 2
				procUnpin()
			}()
		}
		wg.Wait()
		if overlapped[0] && overlapped[1] {
			if got[0] == got[1] {
				t.Fatalf("two goroutines pinned at once got stripe %d and %d, want different ones", got[0], got[1])
			}
			return
		}
		if try == 100 {
			t.Skip("two goroutines never held their Ps at once in 100 tries")
		}
	}
}

// A View's count goes back to the stripe it was added to, however many Ps
// there are and wherever fn runs: after Views on many goroutines, with
// GOMAXPROCS above every kind's stripes and changing meanwhile, with fns
// that yield (and may resume on another P), no shard counts a View in
// progress, and the hits and misses are exact.
func TestViewCountsBalanceAcrossPs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(200))
	e, _ := newTest(t, Config{Shards: 4, MaxBytes: 1 << 20, Policy: evict.Adaptive})
	const keys = 64
	for i := range keys {
		if _, err := e.Set(fmt.Sprint("k", i), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	const goroutines, reads = 300, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range reads {
				if i%50 == 0 && g%30 == 0 {
					runtime.GOMAXPROCS(1 + (g+i)%200)
				}
				if i%4 == 3 {
					e.View("missing", func([]byte) { t.Error("fn called on a miss") })
					continue
				}
				e.View(fmt.Sprint("k", (g+i)%keys), func([]byte) { runtime.Gosched() })
			}
		}()
	}
	wg.Wait()
	for i := range e.shards {
		if v := e.shards[i].views.Load(); !v.none() {
			t.Errorf("shard %d counts a View in progress after every View returned", i)
		}
	}
	st := e.Stats()
	if want := uint64(goroutines * reads / 4); st.Misses != want || st.Hits != 3*want {
		t.Errorf("Stats: %d hits, %d misses; want %d, %d", st.Hits, st.Misses, 3*want, want)
	}
	mustCheck(t, e)
}
