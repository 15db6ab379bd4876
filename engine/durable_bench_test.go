package engine

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Durability benchmarks. Figures and commands are in docs/DURABILITY.md.
//
//	go test -run '^$' -bench 'Durable' -benchtime 2s ./engine/

func benchKey(i int) string { return fmt.Sprintf("key-%011d", i) } // 16 bytes

var benchValue = make([]byte, 64)

// BenchmarkDurableSet measures parallel Set throughput (16-byte keys,
// 64-byte values) without a log and with each fsync policy, in one run so
// the figures compare.
func BenchmarkDurableSet(b *testing.B) {
	for _, c := range []struct {
		name string
		dur  Durability
	}{
		{"nolog", Durability{}},
		{"no", Durability{Sync: SyncNo}},
		{"everysec", Durability{Sync: SyncEverySecond}},
		{"always", Durability{Sync: SyncAlways}},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := c.dur
			if c.name != "nolog" {
				d.Dir = b.TempDir()
				d.RewritePercent = NoAutoRewrite
			}
			e, err := New(Config{Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			var next atomic.Int64
			b.SetBytes(16 + 64)
			b.SetParallelism(8) // 8 writers per CPU: what group commit can share
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1)) % 100_000
					if _, err := e.Set(benchKey(i), benchValue); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// fillDurable writes n entries of 16+64 bytes into a log in dir and closes
// the engine, rewriting the log first if base is set.
func fillDurable(tb testing.TB, dir string, n int, base bool) {
	e, err := New(Config{Durability: Durability{Dir: dir, Sync: SyncNo, RewritePercent: NoAutoRewrite}})
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				if _, err := e.Set(benchKey(i), benchValue); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if base {
		if err := e.Rewrite(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkDurableRecovery1M measures New on a directory holding 1M
// entries of 16+64 bytes, as an incremental log (1M set records) and as a
// rewritten base: the time per recovery and the heap it leaves and peaks
// at (peak-MB is the heap's high-water mark during the replay, sampled).
func BenchmarkDurableRecovery1M(b *testing.B) {
	const n = 1_000_000
	for _, base := range []bool{false, true} {
		name := "log"
		if base {
			name = "base"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			fillDurable(b, dir, n, base)
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak atomic.Uint64
			b.ResetTimer()
			for range b.N {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					var ms runtime.MemStats
					for {
						runtime.ReadMemStats(&ms)
						if ms.HeapAlloc > peak.Load() {
							peak.Store(ms.HeapAlloc)
						}
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
				e, err := New(Config{Durability: Durability{Dir: dir, RewritePercent: NoAutoRewrite}})
				close(stop)
				wg.Wait()
				if err != nil {
					b.Fatal(err)
				}
				if got := e.Recovery().Entries; got != n {
					b.Fatalf("recovered %d entries, want %d", got, n)
				}
				b.StopTimer()
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MB")
				e.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(peak.Load()-before.HeapAlloc)/(1<<20), "peak-MB")
		})
	}
}

// BenchmarkDurableRewriteStall measures the longest Set latency seen by
// writers while a rewrite of 1M entries runs (max-stall-ms), with
// SyncEverySecond, against the longest seen in the same run without a
// rewrite (base-stall-ms).
func BenchmarkDurableRewriteStall(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	fillDurable(b, dir, n, false)
	e, err := New(Config{Durability: Durability{Dir: dir, RewritePercent: NoAutoRewrite}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	measure := func(during func()) time.Duration {
		var worst atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; ; i += 2 {
					select {
					case <-stop:
						return
					default:
					}
					t := time.Now()
					if _, err := e.Set(benchKey(i%n), benchValue); err != nil {
						b.Error(err)
						return
					}
					if d := int64(time.Since(t)); d > worst.Load() {
						worst.Store(d)
					}
				}
			}()
		}
		during()
		close(stop)
		wg.Wait()
		return time.Duration(worst.Load())
	}
	b.ResetTimer()
	for range b.N {
		var took time.Duration
		stall := measure(func() {
			t := time.Now()
			if err := e.Rewrite(); err != nil {
				b.Error(err)
			}
			took = time.Since(t)
		})
		base := measure(func() { time.Sleep(took) })
		b.ReportMetric(float64(stall)/1e6, "max-stall-ms")
		b.ReportMetric(float64(base)/1e6, "base-stall-ms")
		b.ReportMetric(took.Seconds(), "rewrite-s")
	}
}
