package engine_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

// Clock faults: a clock that jumps forward by hours, stands still, goes
// backwards, or jitters. Nothing may panic, resurrect or corrupt the
// engine, and expiry must stay consistent with the deadlines.

// scriptClock returns the readings in vals, one per call, then repeats the
// last one.
type scriptClock struct {
	vals []int64
	i    atomic.Int64
}

func (c *scriptClock) Now() int64 {
	i := int(c.i.Add(1) - 1)
	return c.vals[min(i, len(c.vals)-1)]
}

// jitterClock is a manual clock whose every reading is off by up to ±j.
type jitterClock struct {
	base *clock.Manual
	j    int64
}

func (c *jitterClock) Now() int64 { return c.base.Now() + rand.Int64N(2*c.j+1) - c.j }

func newClockEngine(t *testing.T, c clock.Clock, extra func(*engine.Config)) *engine.Engine {
	t.Helper()
	cfg := engine.Config{Shards: 4, Clock: c, ExpiryInterval: -1}
	if extra != nil {
		extra(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustCheck(t *testing.T, e *engine.Engine) {
	t.Helper()
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestIndexGarbageBounded: after most TTL entries are deleted or lose their
// TTL, the expiry index's garbage stays bounded and the invariants hold.
func TestIndexGarbageBounded(t *testing.T) {
	for _, remove := range []string{"Delete", "Persist", "Set"} {
		clk := clock.NewManual(badStart)
		e := newClockEngine(t, clk, func(c *engine.Config) { c.Shards = 1 })
		for i := 0; i < 300; i++ {
			e.SetTTL(fmt.Sprint(i), []byte("v"), time.Hour)
		}
		for i := 0; i < 290; i++ {
			switch remove {
			case "Delete":
				e.Delete(fmt.Sprint(i))
			case "Persist":
				_, _ = e.Persist(fmt.Sprint(i))
			case "Set":
				e.Set(fmt.Sprint(i), []byte("w"))
			}
		}
		if err := e.Check(); err != nil {
			t.Errorf("after %s of 290 of 300 TTL keys: %v", remove, err)
		}
	}
}

// TestClockJumpForward: the clock jumps 5 hours. Every key whose deadline
// passed is gone for every kind of read, counts as due until reclaimed,
// and one expiry cycle reclaims exactly those; the others are intact with
// their TTL reduced by the jump.
func TestClockJumpForward(t *testing.T) {
	clk := clock.NewManual(badStart)
	var expired atomic.Int64
	e := newClockEngine(t, clk, func(c *engine.Config) {
		c.OnRemove = func(r engine.Removal) {
			if r.Cause == engine.CauseExpired {
				expired.Add(1)
			}
		}
	})
	const n = 600
	ttl := func(i int) time.Duration { return time.Duration(i) * time.Minute } // 1 min .. 10 h
	for i := 1; i <= n; i++ {
		if _, err := e.SetTTL(fmt.Sprint("k", i), []byte("v"), ttl(i)); err != nil {
			t.Fatal(err)
		}
	}
	e.Set("forever", []byte("v"))
	clk.Advance(5 * time.Hour)
	wantDue := 300 // ttl ≤ 5h: i ≤ 300
	if st := e.Stats(); st.Due != wantDue || st.Entries != n+1 {
		t.Fatalf("after the jump: due %d entries %d, want %d %d", st.Due, st.Entries, wantDue, n+1)
	}
	// Reads see exactly the live ones (a third of the due ones read here,
	// the rest left to the cycle).
	for i := 1; i <= n; i++ {
		k := fmt.Sprint("k", i)
		live := ttl(i) > 5*time.Hour
		if i%3 == 0 || live {
			if _, ok := e.Get(k); ok != live {
				t.Fatalf("Get(%s) = %v, want %v", k, ok, live)
			}
		}
		if live {
			if d, _ := e.TTL(k); d != ttl(i)-5*time.Hour {
				t.Fatalf("TTL(%s) = %v, want %v", k, d, ttl(i)-5*time.Hour)
			}
		}
	}
	removed, more := e.RunExpiryCycle()
	if removed != wantDue-wantDue/3 || more {
		t.Fatalf("cycle removed %d (more %v), want %d", removed, more, wantDue-wantDue/3)
	}
	if expired.Load() != int64(wantDue) {
		t.Fatalf("%d expirations reported, want %d", expired.Load(), wantDue)
	}
	if st := e.Stats(); st.Due != 0 || st.Entries != n-wantDue+1 || st.Expired != uint64(wantDue) {
		t.Fatalf("after the cycle: %+v", st)
	}
	// A jump to the year 2200 expires everything with a TTL.
	clk.Set(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))
	e.RunExpiryCycle()
	if e.Len() != 1 {
		t.Fatalf("Len = %d after a jump past every deadline, want 1", e.Len())
	}
	mustCheck(t, e)
}

// TestClockStandsStill: with a clock that never moves, TTLs never run
// down, nothing expires (even a 1 ns TTL: now < now+1), and the expiry
// cycle finds nothing; an already-due ExpireAt still deletes.
func TestClockStandsStill(t *testing.T) {
	clk := clock.NewManual(badStart)
	e := newClockEngine(t, clk, nil)
	for i, d := range []time.Duration{1, time.Millisecond, time.Hour} {
		if _, err := e.SetTTL(fmt.Sprint("k", i), []byte("v"), d); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 1000; round++ {
		for i, d := range []time.Duration{1, time.Millisecond, time.Hour} {
			k := fmt.Sprint("k", i)
			if got, ok := e.TTL(k); !ok || got != d {
				t.Fatalf("round %d: TTL(%s) = %v %v, want %v", round, k, got, ok, d)
			}
		}
		if n, _ := e.RunExpiryCycle(); n != 0 {
			t.Fatalf("cycle removed %d with a standing clock", n)
		}
	}
	if ok, _ := e.ExpireAt("k2", clk.Time(), engine.ExpireConditionAlways); !ok {
		t.Fatal("ExpireAt(now) did not apply")
	}
	if _, ok := e.Get("k2"); ok {
		t.Fatal("ExpireAt(now) did not delete")
	}
	if st := e.Stats(); st.Due != 0 || st.Entries != 2 {
		t.Fatalf("stats %+v", st)
	}
	mustCheck(t, e)
}

// TestClockGoesBackwards: a clock that steps back reads, for the engine, as
// standing still until it passes the highest reading already seen (the
// engine's monotonic guard for clocks other than clock.Real). Keys that a
// read saw expire and keys the cycle reclaimed stay gone, due keys nobody
// touched stay due, TTLs neither grow nor go negative, and new TTLs count
// from the engine's time.
func TestClockGoesBackwards(t *testing.T) {
	clk := clock.NewManual(badStart)
	e := newClockEngine(t, clk, nil)
	e.SetTTL("read", []byte("v"), time.Second)
	e.SetTTL("cycled", []byte("v"), time.Second)
	e.SetTTL("untouched", []byte("v"), time.Second)
	e.SetTTL("long", []byte("v"), time.Hour)
	clk.Advance(2 * time.Second)
	if _, ok := e.Get("read"); ok {
		t.Fatal("visible after its deadline")
	}
	if n, _ := e.RunExpiryCycle(); n != 2 {
		t.Fatalf("cycle removed %d, want 2", n)
	}
	e.SetTTL("untouched", []byte("v"), time.Second) // due at +3s
	clk.Advance(2 * time.Second)                    // +4s
	if st := e.Stats(); st.Due != 1 {
		t.Fatalf("Due = %d, want 1", st.Due)
	}
	clk.Advance(-3 * time.Hour)
	for _, k := range []string{"read", "cycled", "untouched"} {
		if _, ok := e.Get(k); ok {
			t.Fatalf("%s resurrected after the clock stepped back", k)
		}
		if _, ok := e.GetItem(k); ok {
			t.Fatalf("%s resurrected (GetItem)", k)
		}
		if _, ok := e.TTL(k); ok {
			t.Fatalf("%s resurrected (TTL)", k)
		}
	}
	// Time stands still at +4s for the engine.
	want := time.Hour - 4*time.Second
	if d, ok := e.TTL("long"); !ok || d != want {
		t.Fatalf("TTL(long) = %v %v, want %v", d, ok, want)
	}
	e.SetTTL("new", []byte("v"), time.Second)
	clk.Advance(time.Hour) // still before +4s
	if d, ok := e.TTL("new"); !ok || d != time.Second {
		t.Fatalf("TTL(new) = %v %v while the clock catches up, want 1s", d, ok)
	}
	clk.Advance(2*time.Hour + time.Second) // +5s: new's deadline
	if _, ok := e.Get("new"); ok {
		t.Fatal("new key visible at its deadline")
	}
	if d, ok := e.TTL("long"); !ok || d != want-time.Second {
		t.Fatalf("TTL(long) = %v %v, want %v", d, ok, want-time.Second)
	}
	// Counters: one that expired before the step starts again from zero.
	// (The engine's time only advances when it reads the clock: Stats does.)
	e.SetTTL("ctr", []byte("41"), time.Second)
	clk.Advance(time.Second)
	if st := e.Stats(); st.Due != 1 {
		t.Fatalf("Due = %d, want 1 (ctr)", st.Due)
	}
	clk.Advance(-time.Minute)
	if n, err := e.Incr("ctr"); err != nil || n != 1 {
		t.Fatalf("Incr on an expired counter after a step back = %d %v, want 1", n, err)
	}
	mustCheck(t, e)
}

// TestClockStepBackDoesNotResurrect: the clock steps back between a read's decision that a key is due and its
// removal, or while a due key waits to be reclaimed. A key that was due
// must stay gone.
func TestClockStepBackDoesNotResurrect(t *testing.T) {
	T := badStart.UnixNano()
	sec := int64(time.Second)
	for _, read := range []string{"Get", "GetItem", "TTL", "Items"} {
		// SetTTL reads T; the read reads T+2s (due), its removal reads T.
		c := &scriptClock{vals: []int64{T, T + 2*sec, T}}
		e := newClockEngine(t, c, func(c *engine.Config) { c.Shards = 1 })
		e.SetTTL("k", []byte("v"), time.Second)
		var first bool
		switch read {
		case "Get":
			_, first = e.Get("k")
		case "GetItem":
			_, first = e.GetItem("k")
		case "TTL":
			_, first = e.TTL("k")
		case "Items":
			for range e.Items() {
				first = true
			}
		}
		if first {
			t.Fatalf("%s: visible after its deadline", read)
		}
		if _, ok := e.Get("k"); ok {
			t.Errorf("%s reported k missing, then Get found it: resurrected", read)
		}
	}
	// A due key that nothing touched yet.
	clk := clock.NewManual(badStart)
	e := newClockEngine(t, clk, nil)
	e.SetTTL("k", []byte("v"), time.Second)
	clk.Advance(2 * time.Second)
	if st := e.Stats(); st.Due != 1 {
		t.Fatalf("Due = %d, want 1", st.Due)
	}
	clk.Advance(-2 * time.Second)
	if _, ok := e.Get("k"); ok {
		t.Error("a due key became visible again when the clock stepped back")
	}
}

// TestClockChaos runs writers, readers, counters and the background expiry
// goroutine while another goroutine moves the clock forward by random
// amounts, steps it back, and holds it still; a jittering clock is used
// for a second round. Nothing panics, the invariants hold throughout, per
// key versions only increase, and at the end, with the clock past every
// deadline, every TTL key is gone and nothing is due.
func TestClockChaos(t *testing.T) {
	for _, jitter := range []bool{false, true} {
		t.Run(fmt.Sprintf("jitter=%v", jitter), func(t *testing.T) {
			base := clock.NewManual(badStart)
			var c clock.Clock = base
			if jitter {
				c = &jitterClock{base: base, j: int64(time.Second)}
			}
			e := newClockEngine(t, c, func(cfg *engine.Config) {
				cfg.ExpiryInterval = time.Millisecond
				cfg.MaxBytes = 64 << 10
				cfg.Policy = evict.VolatileTTL
			})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the faulty clock
				defer wg.Done()
				r := rand.New(rand.NewPCG(1, 2))
				for {
					select {
					case <-stop:
						return
					default:
					}
					switch r.IntN(4) {
					case 0:
						base.Advance(time.Duration(r.IntN(3000)) * time.Millisecond)
					case 1:
						base.Advance(-time.Duration(r.IntN(2000)) * time.Millisecond)
					case 2:
						base.Advance(time.Duration(r.IntN(3)) * time.Hour)
					case 3: // stand still
					}
					time.Sleep(50 * time.Microsecond)
				}
			}()
			errs := make(chan error, 8)
			deadline := time.Now().Add(time.Second)
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 9))
					last := map[string]uint64{}
					for i := 0; time.Now().Before(deadline); i++ {
						k := fmt.Sprint("k", r.IntN(200))
						var v uint64
						switch r.IntN(6) {
						case 0:
							v, _ = e.SetTTL(k, []byte("value"), time.Duration(1+r.IntN(5000))*time.Millisecond)
						case 1:
							v, _ = e.Set(k, []byte("12"))
						case 2:
							e.Incr(k)
						case 3:
							e.Expire(k, time.Duration(r.IntN(3000)-1000)*time.Millisecond, engine.ExpireCondition(r.IntN(5)))
						case 4:
							if it, ok := e.GetItem(k); ok {
								v = it.Version
								if it.TTL != engine.NoTTL && it.TTL <= 0 && !jitter {
									errs <- fmt.Errorf("GetItem(%s) returned a due item (TTL %v)", k, it.TTL)
									return
								}
							}
						case 5:
							e.GetAndExpire(k, time.Second)
						}
						// Versions of one key only increase (a writer sees
						// its own writes and others' in order).
						if v != 0 {
							if v < last[k] {
								errs <- fmt.Errorf("%s: version %d after %d", k, v, last[k])
								return
							}
							last[k] = v
						}
						if i%500 == 0 {
							if err := e.Check(); err != nil {
								errs <- err
								return
							}
						}
					}
				}()
			}
			time.Sleep(time.Until(deadline))
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			mustCheck(t, e)
			base.Advance(24 * time.Hour)
			for more := true; more; {
				_, more = e.RunExpiryCycle()
			}
			for k, it := range e.Items() {
				if it.TTL != engine.NoTTL {
					t.Fatalf("%s with TTL %v survives past every deadline", k, it.TTL)
				}
			}
			if st := e.Stats(); st.Due != 0 {
				t.Fatalf("Due = %d after the final cycle", st.Due)
			}
			mustCheck(t, e)
		})
	}
}

// TestStatsDueAfterDeadlineMovesLater: an entry whose deadline moved later (sliding TTL) and then passed must count
// in Stats.Due until it is reclaimed.
func TestStatsDueAfterDeadlineMovesLater(t *testing.T) {
	for _, move := range []string{"GetAndExpire", "Expire", "SetKeepTTL"} {
		clk := clock.NewManual(badStart)
		e := newClockEngine(t, clk, func(c *engine.Config) { c.Shards = 1 })
		e.SetTTL("b", []byte("1"), time.Second)
		switch move {
		case "GetAndExpire":
			e.GetAndExpire("b", time.Minute)
		case "Expire":
			e.Expire("b", time.Minute, engine.ExpireConditionGT)
		case "SetKeepTTL":
			e.SetTTL("b", []byte("2"), time.Minute)
		}
		clk.Advance(time.Hour)
		if st := e.Stats(); st.Due != 1 || st.Entries != 1 {
			t.Errorf("%s: Stats Due=%d Entries=%d, want 1 1", move, st.Due, st.Entries)
		}
		if n, _ := e.RunExpiryCycle(); n != 1 {
			t.Errorf("%s: cycle removed %d, want 1", move, n)
		}
	}
}
