package engine_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

// TestStress hammers a small, capped engine with an aggressive expiry
// interval from many goroutines doing a realistic mix — Zipf-distributed
// keys; 80% reads; 10% writes, most with TTLs of 1-200 ms; pinned counters;
// compare-and-swap; deletes; transactions — while a checker goroutine
// verifies, continuously:
//
//   - accounted bytes never exceed the cap (Stats().Bytes ≤ MaxBytes);
//   - the invariants hold (Engine.Check, every 100 ms);
//   - no read returns a due key: every write records an upper bound of its
//     deadline (clock reading after the write returns + TTL), and a read
//     that starts at or after that bound and still returns that version is
//     a violation; a returned TTL is always positive;
//   - per-key versions only increase, as seen by each goroutine;
//
// and at the end, that every counter equals the sum of the increments that
// succeeded on it, and every CAS counter the number of successful swaps
// (nothing lost).
//
// It stops by itself after TIDE_STRESS_DURATION or TIDE_STRESS_OPS
// operations (default 50M), split across the policies. The default run is a
// 1.5 s smoke so that go test ./... stays quick; TIDE_SOAK=1 makes it a 12 s
// soak (CI), and -short skips it. For a longer run:
//
//	TIDE_STRESS_DURATION=10m go test ./engine -run TestStress -v
func TestStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test skipped under -short")
	}
	total := 1500 * time.Millisecond
	if os.Getenv("TIDE_SOAK") != "" {
		total = 12 * time.Second
	}
	if s := os.Getenv("TIDE_STRESS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		total = d
	}
	maxOps := int64(50_000_000)
	if s := os.Getenv("TIDE_STRESS_OPS"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		maxOps = n
	}
	policies := []evict.Spec{evict.AllKeysLRU, evict.AllKeysLFU, evict.VolatileTTL}
	var all stressStats
	for _, p := range policies {
		t.Run(p.Name, func(t *testing.T) {
			var st stressStats
			stressRun(t, &st, p, total/time.Duration(len(policies)), maxOps/int64(len(policies)))
			all.add(&st)
		})
	}
	t.Logf("stress total: %s", all.String())
}

type stressStats struct {
	ops, reads, hits, writes, oom, incrs, cas, casOK, deletes, commits, checks, samples atomic.Int64
	elapsed                                                                             time.Duration
}

func (s *stressStats) add(o *stressStats) {
	for _, p := range [][2]*atomic.Int64{{&s.ops, &o.ops}, {&s.reads, &o.reads}, {&s.hits, &o.hits}, {&s.writes, &o.writes},
		{&s.oom, &o.oom}, {&s.incrs, &o.incrs}, {&s.cas, &o.cas}, {&s.casOK, &o.casOK}, {&s.deletes, &o.deletes},
		{&s.commits, &o.commits}, {&s.checks, &o.checks}, {&s.samples, &o.samples}} {
		p[0].Add(p[1].Load())
	}
	s.elapsed += o.elapsed
}

func (s *stressStats) String() string {
	return fmt.Sprintf("%d ops in %v (%.0f/s): %d reads (%d hits), %d writes (%d out of memory), %d increments, %d CAS (%d swapped), %d deletes, %d commits; checker: %d Check calls, %d byte samples",
		s.ops.Load(), s.elapsed.Round(time.Millisecond), float64(s.ops.Load())/s.elapsed.Seconds(), s.reads.Load(), s.hits.Load(),
		s.writes.Load(), s.oom.Load(), s.incrs.Load(), s.cas.Load(), s.casOK.Load(), s.deletes.Load(), s.commits.Load(),
		s.checks.Load(), s.samples.Load())
}

const (
	stressKeys     = 20_000
	stressCounters = 32
	stressCAS      = 8
	stressWorkers  = 8
	stressMaxBytes = 4 * 48 << 10 // 4 shards × 48 KiB
)

// written records, per data key, the latest version a writer knows of and
// an upper bound of its deadline (0: no TTL; -1: unknown).
type written struct {
	version  uint64
	deadline int64
}

func stressRun(t *testing.T, st *stressStats, policy evict.Spec, d time.Duration, maxOps int64) {
	clk := clock.Real{}
	e, err := engine.New(engine.Config{
		Shards:         4,
		ExpiryInterval: time.Millisecond,
		MaxBytes:       stressMaxBytes,
		Policy:         policy,
		OnRemove:       func(engine.Removal) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	slots := make([]atomic.Pointer[written], stressKeys)
	note := func(i int, v uint64, deadline int64) {
		w := &written{v, deadline}
		for {
			old := slots[i].Load()
			if old != nil && old.version >= v {
				return
			}
			if slots[i].CompareAndSwap(old, w) {
				return
			}
		}
	}
	// Counters are pinned and never deleted or given a TTL; the CAS
	// counters too.
	for i := range stressCAS {
		if _, _, err := e.SetWith(fmt.Sprint("cas:", i), []byte("0"), engine.SetOptions{Pin: true, TTL: engine.NoTTL}); err != nil {
			t.Fatal(err)
		}
	}
	var incrSums [stressWorkers][stressCounters]int64
	var casWins [stressWorkers][stressCAS]int64

	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	fail := make(chan error, stressWorkers+1)
	failf := func(format string, args ...any) {
		select {
		case fail <- fmt.Errorf(format, args...):
		default:
		}
		halt()
	}
	start := time.Now()
	timer := time.AfterFunc(d, halt)
	defer timer.Stop()

	var wg sync.WaitGroup
	for w := 0; w < stressWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			zipf := rand.NewZipf(r, 1.1, 1, stressKeys-1)
			seen := map[int]uint64{} // the highest version this goroutine saw per key
			saw := func(i int, v uint64, what string) bool {
				if v < seen[i] {
					failf("key %d: %s returned version %d after version %d", i, what, v, seen[i])
					return false
				}
				seen[i] = v
				return true
			}
			val := make([]byte, 600)
			for n := 0; ; n++ {
				if n%64 == 0 {
					select {
					case <-stop:
						return
					default:
					}
					if st.ops.Load() >= maxOps {
						halt()
						return
					}
				}
				st.ops.Add(1)
				i := int(zipf.Uint64())
				k := "k:" + strconv.Itoa(i)
				switch p := r.IntN(100); {
				case p < 80: // read
					st.reads.Add(1)
					before := clk.Now()
					it, ok := e.GetItem(k)
					if !ok {
						continue
					}
					st.hits.Add(1)
					if it.TTL != engine.NoTTL && it.TTL <= 0 {
						failf("%s: read returned TTL %v", k, it.TTL)
						return
					}
					if wr := slots[i].Load(); wr != nil && wr.version == it.Version && wr.deadline > 0 && before >= wr.deadline {
						failf("%s: read at %d returned version %d, due at %d at the latest", k, before, it.Version, wr.deadline)
						return
					}
					if !saw(i, it.Version, "GetItem") {
						return
					}
				case p < 90: // write, 90% with a TTL of 1-200 ms
					st.writes.Add(1)
					v := val[:16+r.IntN(len(val)-16)]
					var ver uint64
					var err error
					if r.IntN(10) == 0 {
						ver, err = e.Set(k, v)
						if err == nil {
							note(i, ver, 0)
						}
					} else {
						ttl := time.Duration(1+r.IntN(200)) * time.Millisecond
						ver, err = e.SetTTL(k, v, ttl)
						if err == nil {
							note(i, ver, clk.Now()+int64(ttl))
						}
					}
					switch {
					case errors.Is(err, engine.ErrOutOfMemory):
						st.oom.Add(1)
					case err != nil:
						failf("write %s: %v", k, err)
						return
					default:
						if !saw(i, ver, "Set") {
							return
						}
					}
				case p < 94: // pinned counter
					c := r.IntN(stressCounters)
					delta := int64(1 + r.IntN(3))
					_, err := e.IncrWith(fmt.Sprint("ctr:", c), delta, engine.IncrOptions{Pin: true, TTL: engine.NoTTL})
					switch {
					case err == nil:
						incrSums[w][c] += delta
						st.incrs.Add(1)
					case errors.Is(err, engine.ErrOutOfMemory):
						st.oom.Add(1)
					default:
						failf("incr: %v", err)
						return
					}
				case p < 97: // CAS: read-modify-write on a CAS counter, or swap a data key keeping its TTL
					st.cas.Add(1)
					if r.IntN(2) == 0 {
						c := r.IntN(stressCAS)
						ck := fmt.Sprint("cas:", c)
						it, ok := e.GetItem(ck)
						if !ok {
							failf("%s (pinned) is gone", ck)
							return
						}
						n, err := strconv.ParseInt(string(it.Value), 10, 64)
						if err != nil {
							failf("%s = %q", ck, it.Value)
							return
						}
						_, swapped, err := e.CompareAndSwap(ck, it.Version, strconv.AppendInt(nil, n+1, 10))
						switch {
						case err == nil && swapped:
							casWins[w][c]++
							st.casOK.Add(1)
						case err == nil, errors.Is(err, engine.ErrOutOfMemory):
						default:
							failf("CAS %s: %v", ck, err)
							return
						}
						continue
					}
					it, ok := e.GetItem(k)
					if !ok {
						continue
					}
					// The swap keeps the deadline: carry over what is known.
					dl := int64(-1)
					if wr := slots[i].Load(); wr != nil && wr.version == it.Version {
						dl = wr.deadline
					}
					ver, swapped, err := e.CompareAndSwap(k, it.Version, val[:32])
					if err != nil && !errors.Is(err, engine.ErrOutOfMemory) {
						failf("CAS %s: %v", k, err)
						return
					}
					if swapped {
						st.casOK.Add(1)
						if ver <= it.Version {
							failf("%s: CAS from version %d gave version %d", k, it.Version, ver)
							return
						}
						note(i, ver, dl)
						if !saw(i, ver, "CompareAndSwap") {
							return
						}
					}
				case p < 99: // delete
					st.deletes.Add(1)
					if r.IntN(2) == 0 {
						e.Delete(k)
					} else if it, ok := e.GetItem(k); ok {
						e.CompareAndDelete(k, it.Version)
					}
				default: // transaction: move a value between two keys if the first is unchanged
					st.commits.Add(1)
					j := int(zipf.Uint64())
					if j == i {
						continue
					}
					k2 := "k:" + strconv.Itoa(j)
					it, ok := e.GetItem(k)
					var pre []engine.Precondition
					if ok {
						pre = []engine.Precondition{{Key: k, Version: it.Version}}
					}
					ttl := time.Duration(1+r.IntN(200)) * time.Millisecond
					vers, committed, err := e.Commit(pre, []engine.Op{{Key: k, Delete: true}, {Key: k2, Value: val[:64], TTL: ttl}})
					if err != nil && !errors.Is(err, engine.ErrOutOfMemory) {
						failf("Commit: %v", err)
						return
					}
					if committed {
						note(j, vers[1], clk.Now()+int64(ttl))
					}
				}
			}
		}()
	}

	// The checker.
	wg.Add(1)
	go func() {
		defer wg.Done()
		lastCheck := time.Now()
		r := rand.New(rand.NewPCG(99, 1))
		seen := map[int]uint64{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := e.Stats()
			st.samples.Add(1)
			if s.Bytes > stressMaxBytes {
				failf("accounted bytes %d over the cap %d", s.Bytes, stressMaxBytes)
				return
			}
			for range 32 {
				i := r.IntN(200) // the hot keys
				if it, ok := e.GetItem("k:" + strconv.Itoa(i)); ok {
					if it.Version < seen[i] {
						failf("checker: key %d version %d after %d", i, it.Version, seen[i])
						return
					}
					seen[i] = it.Version
				}
			}
			if time.Since(lastCheck) > 100*time.Millisecond {
				if err := e.Check(); err != nil {
					failf("Check: %v", err)
					return
				}
				st.checks.Add(1)
				lastCheck = time.Now()
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()

	wg.Wait()
	st.elapsed = time.Since(start)
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}

	// Nothing lost.
	for c := range stressCounters {
		var want int64
		for w := range stressWorkers {
			want += incrSums[w][c]
		}
		k := fmt.Sprint("ctr:", c)
		v, ok := e.Get(k)
		if want == 0 && !ok {
			continue
		}
		if got, _ := strconv.ParseInt(string(v), 10, 64); !ok || got != want {
			t.Errorf("%s = %q (found %v), want %d successful increments", k, v, ok, want)
		}
	}
	for c := range stressCAS {
		var want int64
		for w := range stressWorkers {
			want += casWins[w][c]
		}
		k := fmt.Sprint("cas:", c)
		if v, _ := e.Get(k); string(v) != strconv.FormatInt(want, 10) {
			t.Errorf("%s = %q, want %d successful swaps", k, v, want)
		}
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	fin := e.Stats()
	if fin.Bytes > stressMaxBytes {
		t.Fatalf("accounted bytes %d over the cap %d", fin.Bytes, stressMaxBytes)
	}
	t.Logf("%s; engine: %d expired, %d evicted, %d entries at the end", st.String(), fin.Expired, fin.Evicted, fin.Entries)
	if fin.Evicted == 0 || fin.Expired == 0 {
		// Slow machines and -race may not fill the cap; not a failure.
		t.Logf("note: the run evicted %d and expired %d entries", fin.Evicted, fin.Expired)
	}
}
