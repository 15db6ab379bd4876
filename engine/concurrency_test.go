package engine

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
)

func TestConcurrentIncrSumsExactly(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 4})
	const workers, each = 16, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := e.IncrBy("n", int64(w+1)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := int64(each * workers * (workers + 1) / 2)
	v, _ := e.Get("n")
	if got, _ := strconv.ParseInt(string(v), 10, 64); got != want {
		t.Fatalf("counter = %d, want %d", got, want)
	}
}

func TestConcurrentSetIfAbsentOneWinner(t *testing.T) {
	e, _ := newTest(t, Config{})
	for round := range 50 {
		key := "lock" + strconv.Itoa(round)
		var winners atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, ok, err := e.SetWith(key, []byte("me"), SetOptions{Only: ConditionIfAbsent, TTL: time.Minute})
				if err != nil {
					t.Error(err)
				}
				if ok {
					winners.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if got := winners.Load(); got != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, got)
		}
	}
}

func TestConcurrentCASLosesNoUpdate(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 2})
	e.Set("n", []byte("0"))
	const workers, each = 8, 300
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					it, _ := e.GetItem("n")
					n, _ := strconv.Atoi(string(it.Value))
					if _, ok, err := e.CompareAndSwap("n", it.Version, []byte(strconv.Itoa(n+1))); err != nil {
						t.Error(err)
						return
					} else if ok {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	if v, _ := getS(e, "n"); v != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s, want %d", v, workers*each)
	}
}

func TestConcurrentCommitsNoDeadlock(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 8})
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		e.Set(k, []byte("0"))
	}
	var wg sync.WaitGroup
	var committed atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				// Move one unit from x to y, all-or-nothing.
				x, y := keys[(w+i)%len(keys)], keys[(w*7+i*3+1)%len(keys)]
				if x == y {
					continue
				}
				ix, _ := e.GetItem(x)
				iy, _ := e.GetItem(y)
				nx, _ := strconv.Atoi(string(ix.Value))
				ny, _ := strconv.Atoi(string(iy.Value))
				_, ok, err := e.Commit([]Precondition{{x, ix.Version}, {y, iy.Version}},
					[]Op{{Key: x, Value: []byte(strconv.Itoa(nx - 1)), TTL: NoTTL}, {Key: y, Value: []byte(strconv.Itoa(ny + 1)), TTL: NoTTL}})
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					committed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	sum := 0
	for _, k := range keys {
		v, _ := getS(e, k)
		n, _ := strconv.Atoi(v)
		sum += n
	}
	if sum != 0 {
		t.Fatalf("sum after %d transfers = %d, want 0", committed.Load(), sum)
	}
	if committed.Load() == 0 {
		t.Fatal("no transaction committed")
	}
}

func TestConcurrentReadersAndExpiry(t *testing.T) {
	e, err := New(Config{Shards: 4, ExpiryInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := "k" + strconv.Itoa((i*7+w)%512)
				if i%4 == 0 {
					e.SetTTL(k, []byte("value"), time.Duration(1+i%3)*time.Millisecond)
				} else {
					buf, _ = e.AppendGet(buf[:0], k)
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestHitMissCountsExactUnderConcurrency(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 4})
	e.Set("present", []byte("v"))
	const workers, each = 8, 1000
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 8)
			for i := range each {
				if i%4 == 0 {
					buf, _ = e.AppendGet(buf[:0], "absent")
				} else {
					buf, _ = e.AppendGet(buf[:0], "present")
				}
			}
		}()
	}
	wg.Wait()
	st := e.Stats()
	if wantH, wantM := uint64(workers*each*3/4), uint64(workers*each/4); st.Hits != wantH || st.Misses != wantM {
		t.Fatalf("hits, misses = %d, %d, want %d, %d", st.Hits, st.Misses, wantH, wantM)
	}
}

// Reads that race writers in their shard — and so wait for them and retry
// the optimistic read, or fall back to the lock — still count every hit
// and every miss exactly once, and never return a torn or stale value:
// every present key's value is some write's value in full.
func TestReadsRacingWritersCountExactlyAndSeeWholeValues(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: evict.TinyLFU})
	const present = 8
	key := func(i int) string { return "present-" + strconv.Itoa(i) }
	// A value is its fill byte repeated; its length depends on the byte,
	// so overwrites are done in place and by appending a new record.
	valueOf := func(b byte) []byte { return bytes.Repeat([]byte{b}, 8+int(b)%40) }
	for i := range present {
		if _, err := e.Set(key(i), valueOf(1)); err != nil {
			t.Fatal(err)
		}
	}
	each := 20000
	if raceEnabled {
		each = 4000
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := e.Set(key((i+w)%present), valueOf(byte(1+(i*7+w)%250))); err != nil {
					t.Error(err)
					return
				}
				churn := "churn-" + strconv.Itoa(i%61)
				if i%3 == 0 {
					e.Delete(churn)
				} else if _, err := e.Set(churn, valueOf(byte(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	whole := func(v []byte) error {
		if len(v) == 0 || !bytes.Equal(v, valueOf(v[0])) {
			return fmt.Errorf("read a value no write wrote: %q", v)
		}
		return nil
	}
	const readers = 3
	errs := make(chan error, readers)
	for r := range readers {
		go func() {
			var buf []byte
			for i := range each {
				var ok bool
				var err error
				switch i % 4 {
				case 0:
					buf, ok = e.AppendGet(buf[:0], key((i+r)%present))
					if ok {
						err = whole(buf)
					}
				case 1:
					ok = e.View(key((i+r)%present), func(v []byte) { err = whole(v) })
				case 2:
					_, ok = e.AppendGet(buf[:0], "absent")
					ok = !ok
				case 3:
					ok = !e.View("absent", func([]byte) { err = errors.New("View called fn on a miss") })
				}
				if err == nil && !ok {
					err = fmt.Errorf("read %d: a present key missed or an absent one hit", i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range readers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(stop)
	writers.Wait()
	st := e.Stats()
	if want := uint64(readers * each / 2); st.Hits != want || st.Misses != want {
		t.Fatalf("hits, misses = %d, %d, want %d each", st.Hits, st.Misses, want)
	}
	mustCheck(t, e)
}

// Once a read reports a key with a TTL missing (its deadline passed), no
// later read reports it present, while the clock runs and writers change
// the same shard (lock-free reads of keys with a deadline among them:
// Get, AppendGet, View, GetItem, TTL). Every present value is the one
// stored, with a TTL left within the one set. A stress check of the promise;
// TestEveryOpReadsClockUnderShardLock is the deterministic guard of how
// lock-free reads read the clock.
func TestExpiredKeyStaysMissingUnderLockFreeReads(t *testing.T) {
	clk := clock.NewManual(t0)
	e, _ := newTest(t, Config{Shards: 1, Clock: clk, ExpiryInterval: time.Hour})
	const keys = 200
	for i := range keys {
		if _, err := e.SetTTL("t"+strconv.Itoa(i), []byte("value"+strconv.Itoa(i)), time.Duration(1+i)*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	var missing [keys]atomic.Bool
	var wrong atomic.Int32
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() { // the clock
		defer wg.Done()
		for range keys + 10 {
			clk.Advance(time.Millisecond)
			runtime.Gosched()
		}
		close(stop)
	}()
	go func() { // a writer of other keys of the shard
		defer wg.Done()
		untilStopped(stop, func(i int) { e.Set("w"+strconv.Itoa(i%64), []byte("w")) })
	}()
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := (i*7 + r*31) % keys
				key, want := "t"+strconv.Itoa(k), "value"+strconv.Itoa(k)
				gone := missing[k].Load() // reported missing before this read began
				var ok bool
				switch (i + r) % 5 {
				case 3:
					var it Item
					it, ok = e.GetItem(key)
					ok = ok && ((string(it.Value) == want && it.TTL > 0 && it.TTL <= time.Duration(1+k)*time.Millisecond) || wrong.Add(1) < 0)
				case 4:
					var ttl time.Duration
					ttl, ok = e.TTL(key)
					ok = ok && (ttl > 0 || wrong.Add(1) < 0)
				case 0:
					var v []byte
					v, ok = e.Get(key)
					ok = ok && (string(v) == want || wrong.Add(1) < 0)
				case 1:
					buf, ok = e.AppendGet(buf[:0], key)
					ok = ok && (string(buf) == want || wrong.Add(1) < 0)
				case 2:
					ok = e.View(key, func(v []byte) {
						if string(v) != want {
							wrong.Add(1)
						}
					})
				}
				if ok && gone {
					t.Errorf("%s read present after a read reported it missing", key)
					return
				}
				if !ok {
					missing[k].Store(true)
				}
			}
		}()
	}
	wg.Wait()
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d reads saw a value (or a TTL) other than the one stored", n)
	}
	for k := range keys {
		if !missing[k].Load() {
			if _, ok := e.Get("t" + strconv.Itoa(k)); ok {
				t.Fatalf("t%d still present after its deadline", k)
			}
		}
	}
	mustCheck(t, e)
}
