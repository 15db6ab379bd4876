package bench

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
)

// Mix is one read/write mix of the throughput workloads.
type Mix struct {
	Name  string // "100-0": percent reads, percent writes
	Write uint8  // percent of operations that are writes
}

// Mixes are the read/write mixes of every throughput workload.
var Mixes = []Mix{{"100-0", 0}, {"90-10", 10}, {"75-25", 25}, {"50-50", 50}}

// ReadPath is the call a throughput workload reads with.
type ReadPath uint8

const (
	// ReadAppend reads with Cache.Get into a reused buffer: tide's
	// AppendGet, the native read of every other peer (which may return its
	// stored slice).
	ReadAppend ReadPath = iota
	// ReadCopy reads with Copier.GetCopy: tide's Get, a fresh copy per read.
	ReadCopy
	// ReadView reads with Viewer.View: a zero-copy read.
	ReadView
)

// ReadPaths lists every ReadPath.
var ReadPaths = []ReadPath{ReadCopy, ReadAppend, ReadView}

// String names the tide call behind the path.
func (p ReadPath) String() string {
	switch p {
	case ReadAppend:
		return "AppendGet"
	case ReadCopy:
		return "Get"
	case ReadView:
		return "View"
	}
	return "ReadPath(?)"
}

// Copier is implemented by adapters whose cache has a read that returns a
// freshly allocated copy (tide's Get).
type Copier interface {
	GetCopy(key string) ([]byte, bool)
}

// Viewer is implemented by adapters whose cache has a zero-copy read: fn
// sees the stored value, valid only during the call, and View reports
// whether key was found (fn is not called otherwise). The speed workloads
// use it when the adapter implements it and report "n/a" otherwise.
type Viewer interface {
	View(key string, fn func([]byte)) bool
}

// Supports reports whether c can read with path p.
func Supports(c Cache, p ReadPath) bool {
	switch p {
	case ReadAppend:
		return true
	case ReadCopy:
		_, ok := c.(Copier)
		return ok
	case ReadView:
		_, ok := c.(Viewer)
		return ok
	}
	return false
}

// cpuNanos returns the CPU time (user + system) the process has used. On a
// shared, oversubscribed machine wall time per op inflates with the load of
// other tenants; CPU time per op (cpu-ns/op, GC workers included) much
// less so. The README reports both.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// RunMix is the timed loop of every throughput workload: b.RunParallel
// goroutines walk the shared Zipf trace of d, each from its own offset;
// an op is a write when d.Ops says so, otherwise a read of keys[k] with
// path (which c must support). A write stores under d.Stored[k] a fresh
// copy of a value (with EntryTTL if ttl), made from a template in the
// goroutine's cache: as an application hands a cache a value it has just
// made, in memory of its own and in the writing core's cache (a cache
// that keeps the slice keeps that copy; one that copies reads it there;
// Dataset.Shared's writes hand over Values[0] itself, as before). It
// reports allocs/op (the cache's: the
// copy each write makes is not counted), cpu-ns/op (the process's CPU
// time over the timed loop) and hit% of the reads.
func RunMix(b *testing.B, c Cache, d *Dataset, keys []string, write uint8, ttl bool, path ReadPath) {
	b.ReportAllocs()
	var gid atomic.Int64
	var hits, reads, copies atomic.Int64
	copier, _ := c.(Copier)
	viewer, _ := c.(Viewer)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	cpu0 := cpuNanos()
	b.RunParallel(func(pb *testing.PB) {
		i := int(gid.Add(1)) * 0x9E3779B
		buf := make([]byte, 0, 256)
		var h, r, cp, seen int64
		// tmpl is this goroutine's value to copy: hot in its cache, so
		// that the copy costs what an application's making of a value
		// does (an allocation and 64 bytes written), not a cold read.
		tmpl := append([]byte(nil), d.Values[0]...)
		see := func(v []byte) { seen += int64(len(v)) }
		for pb.Next() {
			j := i & (TraceLen - 1)
			i++
			k := int(d.Trace[j])
			if d.Ops[j] < write {
				var v []byte
				if d.shared {
					v = d.Values[0]
				} else {
					v = append([]byte(nil), tmpl...) // the one allocation of a write not the cache's
					cp++
				}
				if ttl {
					c.SetTTL(d.Stored[k], v, EntryTTL(k))
				} else {
					c.Set(d.Stored[k], v)
				}
				continue
			}
			var ok bool
			switch path {
			case ReadAppend:
				buf, ok = c.Get(buf[:0], keys[k])
			case ReadCopy:
				var v []byte
				v, ok = copier.GetCopy(keys[k])
				seen += int64(len(v))
			case ReadView:
				ok = viewer.View(keys[k], see)
			}
			r++
			if ok {
				h++
			}
		}
		hits.Add(h)
		reads.Add(r)
		copies.Add(cp)
		sink.Add(seen)
	})
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N), "cpu-ns/op")
	allocs := int64(m1.Mallocs-m0.Mallocs) - copies.Load()
	if allocs < 0 {
		b.Fatalf("%d allocations over the loop, fewer than the %d value copies it made", m1.Mallocs-m0.Mallocs, copies.Load())
	}
	b.ReportMetric(float64(allocs)/float64(b.N), "allocs/op")
	if r := reads.Load(); r > 0 {
		b.ReportMetric(100*float64(hits.Load())/float64(r), "hit%")
	}
}

// sink keeps the bytes a read saw observable, so that no read is dead code.
var sink atomic.Int64
