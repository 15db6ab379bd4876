package engine

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

const benchKeys = 1 << 20

func benchKeySet() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i) + ":padding" // ~16-20 bytes
	}
	return keys
}

// zipfIndexes pre-generates a Zipf-distributed (s = 1.01) access sequence.
func zipfIndexes(n int, seed uint64) []uint32 {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	z := rand.NewZipf(r, 1.01, 1, benchKeys-1)
	idx := make([]uint32, n)
	for i := range idx {
		idx[i] = uint32(z.Uint64())
	}
	return idx
}

func filledEngine(b *testing.B, keys []string, ttl time.Duration) *Engine {
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 64)
	for _, k := range keys {
		if ttl > 0 {
			e.SetTTL(k, val, ttl)
		} else {
			e.Set(k, val)
		}
	}
	return e
}

// runZipf runs op in parallel over the pre-generated Zipf sequence; each
// goroutine starts at its own offset and keeps its own read buffer. Besides
// wall time it reports the process's CPU time per operation (cpu-ns/op:
// user + system, GC included), which a busy machine inflates less: time
// spent waiting for a core is not counted, time spent on contended cache
// lines is.
func runZipf(b *testing.B, keys []string, idx []uint32, op func(i int, key string, buf []byte) []byte) {
	var seed atomic.Uint32
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919))
		buf := make([]byte, 0, 128)
		for pb.Next() {
			buf = op(i, keys[idx[i&(len(idx)-1)]], buf)
			i++
		}
	})
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkGet(b *testing.B) {
	keys := benchKeySet()
	idx := zipfIndexes(1<<20, 1)
	for _, ttl := range []time.Duration{0, time.Hour} {
		b.Run("ttl="+ttl.String(), func(b *testing.B) {
			e := filledEngine(b, keys, ttl)
			defer e.Close()
			runZipf(b, keys, idx, func(_ int, k string, buf []byte) []byte {
				buf, _ = e.AppendGet(buf[:0], k)
				return buf
			})
		})
	}
}

func BenchmarkSet(b *testing.B) {
	keys := benchKeySet()
	idx := zipfIndexes(1<<20, 2)
	val := make([]byte, 64)
	for _, ttl := range []time.Duration{0, time.Hour} {
		b.Run("ttl="+ttl.String(), func(b *testing.B) {
			e := filledEngine(b, keys, ttl)
			defer e.Close()
			runZipf(b, keys, idx, func(_ int, k string, buf []byte) []byte {
				if ttl > 0 {
					e.SetTTL(k, val, ttl)
				} else {
					e.Set(k, val)
				}
				return buf
			})
		})
	}
}

// BenchmarkMix90 is a 90% read / 10% write mix over Zipf keys.
func BenchmarkMix90(b *testing.B) {
	keys := benchKeySet()
	idx := zipfIndexes(1<<20, 3)
	e := filledEngine(b, keys, 0)
	defer e.Close()
	val := make([]byte, 64)
	runZipf(b, keys, idx, func(i int, k string, buf []byte) []byte {
		if i%10 == 0 {
			e.Set(k, val)
			return buf
		}
		buf, _ = e.AppendGet(buf[:0], k)
		return buf
	})
}

func BenchmarkGetMiss(b *testing.B) {
	keys := benchKeySet()
	e := filledEngine(b, keys, 0)
	defer e.Close()
	missing := make([]string, len(keys))
	for i := range missing {
		missing[i] = "absent:" + strconv.Itoa(i) + ":pad"
	}
	idx := zipfIndexes(1<<20, 4)
	runZipf(b, missing, idx, func(_ int, k string, buf []byte) []byte {
		buf, _ = e.AppendGet(buf[:0], k)
		return buf
	})
}

// BenchmarkBaselineSyncMap is a reference point measured in the same run:
// sync.Map holding the same keys, read with the same Zipf sequence.
func BenchmarkBaselineSyncMap(b *testing.B) {
	keys := benchKeySet()
	idx := zipfIndexes(1<<20, 1)
	var m sync.Map
	val := make([]byte, 64)
	for _, k := range keys {
		m.Store(k, val)
	}
	runZipf(b, keys, idx, func(_ int, k string, buf []byte) []byte {
		v, _ := m.Load(k)
		return append(buf[:0], v.([]byte)...)
	})
}

// filledCappedEngine returns an engine of cfg holding every key with a
// 64-byte value; every Set must succeed.
func filledCappedEngine(b *testing.B, cfg Config, keys []string) *Engine {
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 64)
	for _, k := range keys {
		if _, err := e.Set(k, val); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// BenchmarkCappedMix is the configuration users run: 1M keys of ~20 B with
// 64 B values, a byte cap of 1.5× the data and the recommended policy
// (Adaptive), Zipf 1.01, at the
// read/write mixes of bench/cmd/speed, read with AppendGet and View.
func BenchmarkCappedMix(b *testing.B) {
	keys := benchKeySet()
	idx := zipfIndexes(1<<20, 4)
	var data int64
	for _, k := range keys {
		data += int64(len(k)) + 64 + EntryOverhead
	}
	e := filledCappedEngine(b, Config{MaxBytes: data + data/2, Policy: evict.Adaptive}, keys)
	defer e.Close()
	val := make([]byte, 64)
	view := func(v []byte) {
		if len(v) != 64 {
			panic("View: wrong value")
		}
	}
	for _, writePct := range []int{0, 10, 25, 50} {
		for _, path := range []string{"AppendGet", "View"} {
			b.Run(fmt.Sprintf("mix=%d-%d/%s", 100-writePct, writePct, path), func(b *testing.B) {
				runZipf(b, keys, idx, func(i int, k string, buf []byte) []byte {
					if i%100 < writePct {
						if _, err := e.Set(k, val); err != nil {
							panic(err)
						}
						return buf
					}
					if path == "View" {
						e.View(k, view)
						return buf
					}
					buf, _ = e.AppendGet(buf[:0], k)
					return buf
				})
			})
		}
	}
}

// BenchmarkHotShard is contention in isolation: 4096 keys in 4 shards, a
// byte cap and TinyLFU, Zipf reads with View and writes of the same size.
// The data fits the CPU cache, so what -cpu 2 adds over -cpu 1 is the
// cost of the lines the two cores share: the shard's sequence count and
// lock, the hit counters, the read log. Compare builds in one run.
func BenchmarkHotShard(b *testing.B) {
	const n = 4096
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "hot:" + strconv.Itoa(i) + ":padding"
	}
	r := rand.New(rand.NewPCG(5, 5))
	z := rand.NewZipf(r, 1.01, 1, n-1)
	idx := make([]uint32, 1<<16)
	for i := range idx {
		idx[i] = uint32(z.Uint64())
	}
	e := filledCappedEngine(b, Config{Shards: 4, MaxBytes: 2 * n * (32 + 64 + EntryOverhead), Policy: evict.TinyLFU}, keys)
	defer e.Close()
	val := make([]byte, 64)
	view := func([]byte) {}
	for _, writePct := range []int{0, 10, 50} {
		b.Run(fmt.Sprintf("mix=%d-%d", 100-writePct, writePct), func(b *testing.B) {
			runZipf(b, keys, idx, func(i int, k string, buf []byte) []byte {
				if i%100 < writePct {
					if _, err := e.Set(k, val); err != nil {
						panic(err)
					}
					return buf
				}
				e.View(k, view)
				return buf
			})
		})
	}
}

// BenchmarkReadDuringCompaction measures how long a read of one shard
// waits while a writer of the same shard compacts its arena or grows its
// table, work that takes time proportional to the shard (here 200k
// entries). A writer goroutine keeps rewriting keys with values of a
// changing length (so records are appended and the arena fills with
// garbage and is rebuilt) and adding keys (so the table grows); the timed
// loop reads other keys of the shard and reports the slowest read
// (max-read-ns) and how many reads took over 1 ms (slow-reads), beside
// ns/op. A read that waited for a whole compaction shows in both; so does
// one whose thread the OS did not run for that long (a loaded machine).
func BenchmarkReadDuringCompaction(b *testing.B) {
	e, err := New(Config{Shards: 1, ExpiryInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	const n = 200_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
		if _, err := e.Set(keys[i], make([]byte, 64)); err != nil {
			b.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	vals := [][]byte{make([]byte, 64), make([]byte, 72), make([]byte, 80), make([]byte, 88)}
	added := make([]string, 1<<20)
	for i := range added {
		added[i] = "new" + strconv.Itoa(i)
	}
	go func() { // allocates nothing, so that no GC pause is timed
		defer close(done)
		untilStopped(stop, func(i int) {
			// The upper half is rewritten (never read), lengths cycling.
			e.Set(keys[n/2+i%(n/2)], vals[i/(n/2)%4])
			if i%4 == 0 {
				e.Set(added[i/4%len(added)], nil)
			}
		})
	}()
	var slowest time.Duration
	slow := 0
	b.ReportAllocs()
	b.ResetTimer()
	buf := make([]byte, 0, 128)
	for i := range b.N {
		t0 := time.Now()
		buf, _ = e.AppendGet(buf[:0], keys[(i*7919)%(n/2)])
		d := time.Since(t0)
		slowest = max(slowest, d)
		if d > time.Millisecond {
			slow++
		}
	}
	b.StopTimer()
	close(stop)
	<-done
	b.ReportMetric(float64(slowest.Nanoseconds()), "max-read-ns")
	b.ReportMetric(float64(slow), "slow-reads")
}
