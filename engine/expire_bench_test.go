package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
)

// expireDueKeys and expireResident are the shape of the expiry cost the
// project promises: expiring 10k due keys beside 1M not-yet-due keys costs
// at most twice as much as expiring them alone.
const (
	expireDueKeys  = 10_000
	expireResident = 1_000_000
)

// expireBench is an engine (the bench/ "tide" configuration: unbounded, no
// background expiry) with resident not-yet-due keys (1 h TTLs, in
// ascending order, as bench/cmd/expiry -cost writes them) and a manual
// clock, into which each round writes the due keys and then times the
// explicit expiry pass that removes them.
type expireBench struct {
	e   *Engine
	clk *clock.Manual
	due []string
	val []byte
}

func newExpireBench(b *testing.B, resident int) *expireBench {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	e, err := New(Config{Clock: clk, ExpiryInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	x := &expireBench{e: e, clk: clk, val: make([]byte, 64)}
	for i := range resident {
		if _, err := e.SetTTL(fmt.Sprintf("r%015d", i), x.val, time.Hour+time.Duration(i)*time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
	x.due = make([]string, expireDueKeys)
	for i := range x.due {
		x.due[i] = fmt.Sprintf("d%015d", i)
	}
	return x
}

// passTime is one pass's wall time and the CPU time of the thread that ran
// it (cpu is 0 where there is no per-thread CPU clock).
type passTime struct{ wall, cpu time.Duration }

// round writes the due keys with TTLs of 500 ms + i µs, moves the clock
// past all of them, evicts the CPU caches (the pass meets its entries
// cold, as it does when they expire long after they were written) and
// times the expiry pass (the benchmark timer runs during the pass only).
func (x *expireBench) round(b *testing.B) passTime {
	for i, k := range x.due {
		if _, err := x.e.SetTTL(k, x.val, 500*time.Millisecond+time.Duration(i)*time.Microsecond); err != nil {
			b.Fatal(err)
		}
	}
	x.clk.Advance(time.Second)
	evictCaches()
	before := x.e.Len()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.StartTimer()
	c0, _ := threadCPU()
	t := time.Now()
	for {
		if _, more := x.e.RunExpiryCycle(); !more {
			break
		}
	}
	wall := time.Since(t)
	c1, _ := threadCPU()
	b.StopTimer()
	if got := before - x.e.Len(); got != len(x.due) {
		b.Fatalf("the pass removed %d entries, want %d", got, len(x.due))
	}
	return passTime{wall, c1 - c0}
}

// evictBuf is larger than the CPU caches; walking it evicts them.
var (
	evictBuf  = make([]uint64, 64<<20/8)
	evictSink uint64
)

func evictCaches() {
	for i := 0; i < len(evictBuf); i += 8 {
		evictBuf[i]++
		evictSink += evictBuf[i]
	}
}

// medianPass returns the median wall and CPU time of ts.
func medianPass(ts []passTime) passTime {
	w := make([]time.Duration, len(ts))
	c := make([]time.Duration, len(ts))
	for i, t := range ts {
		w[i], c[i] = t.wall, t.cpu
	}
	slices.Sort(w)
	slices.Sort(c)
	return passTime{w[len(w)/2], c[len(c)/2]}
}

// BenchmarkExpireDue times an explicit expiry pass (RunExpiryCycle until
// done) removing 10k due keys, alone and beside 1M not-yet-due keys. Each
// b.N iteration is one pass; ns/op is the median wall time of a pass and
// cpu-ns/op the median CPU time of the thread that ran it (on a shared
// machine, wall time includes time other processes held the CPU).
//
// ratio runs both cases in alternation, in one process, and reports the
// medians of each and loaded ÷ alone, by wall time (ratio) and by CPU
// time (cpu-ratio). The promise is a ratio ≤ 2:
//
//	go test -run '^$' -bench 'ExpireDue/ratio' -benchtime 30x ./engine/
func BenchmarkExpireDue(b *testing.B) {
	for _, c := range []struct {
		name     string
		resident int
	}{{"alone", 0}, {"beside-1M", expireResident}} {
		b.Run(c.name, func(b *testing.B) {
			x := newExpireBench(b, c.resident)
			defer x.e.Close()
			b.ResetTimer()
			b.StopTimer()
			ts := make([]passTime, 0, b.N)
			for range b.N {
				ts = append(ts, x.round(b))
			}
			m := medianPass(ts)
			b.ReportMetric(float64(m.wall.Nanoseconds()), "ns/op")
			b.ReportMetric(float64(m.cpu.Nanoseconds()), "cpu-ns/op")
		})
	}
	b.Run("ratio", func(b *testing.B) {
		alone, loaded := newExpireBench(b, 0), newExpireBench(b, expireResident)
		defer alone.e.Close()
		defer loaded.e.Close()
		b.ResetTimer()
		b.StopTimer()
		var ta, tl []passTime
		for range b.N {
			ta = append(ta, alone.round(b))
			tl = append(tl, loaded.round(b))
		}
		a, l := medianPass(ta), medianPass(tl)
		b.ReportMetric(float64(l.wall.Nanoseconds()), "ns/op")
		b.ReportMetric(float64(a.wall.Nanoseconds()), "alone-ns/pass")
		b.ReportMetric(float64(l.wall.Nanoseconds()), "loaded-ns/pass")
		b.ReportMetric(float64(l.wall)/float64(a.wall), "ratio")
		if a.cpu > 0 {
			b.ReportMetric(float64(a.cpu.Nanoseconds()), "alone-cpu-ns/pass")
			b.ReportMetric(float64(l.cpu.Nanoseconds()), "loaded-cpu-ns/pass")
			b.ReportMetric(float64(l.cpu)/float64(a.cpu), "cpu-ratio")
		}
	})
}
