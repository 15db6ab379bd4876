package engine

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
