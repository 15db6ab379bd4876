package engine

import (
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

const benchKeys = 1 << 20

func benchKeySet() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i) + ":padding" // ~16-20 bytes
	}
	return keys
}

// zipfIndexes pre-generates a Zipf-distributed access sequence.
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

func BenchmarkGet(b *testing.B) {
	keys := benchKeySet()
	idx := zipfIndexes(1<<20, 1)
	for _, ttl := range []time.Duration{0, time.Hour} {
		b.Run("ttl="+ttl.String(), func(b *testing.B) {
			e := filledEngine(b, keys, ttl)
			defer e.Close()
			var seed atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(seed.Add(7919))
				buf := make([]byte, 0, 128)
				for pb.Next() {
					buf, _ = e.AppendGet(buf[:0], keys[idx[i&(len(idx)-1)]])
					i++
				}
			})
		})
	}
}

func BenchmarkSet(b *testing.B) {
	keys := benchKeySet()
	idx := zipfIndexes(1<<20, 2)
	for _, ttl := range []time.Duration{0, time.Hour} {
		b.Run("ttl="+ttl.String(), func(b *testing.B) {
			e := filledEngine(b, keys, ttl)
			defer e.Close()
			val := make([]byte, 64)
			var seed atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(seed.Add(7919))
				for pb.Next() {
					k := keys[idx[i&(len(idx)-1)]]
					if ttl > 0 {
						e.SetTTL(k, val, ttl)
					} else {
						e.Set(k, val)
					}
					i++
				}
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
	var seed atomic.Uint32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919))
		buf := make([]byte, 0, 128)
		for pb.Next() {
			k := keys[idx[i&(len(idx)-1)]]
			if i%10 == 0 {
				e.Set(k, val)
			} else {
				buf, _ = e.AppendGet(buf[:0], k)
			}
			i++
		}
	})
}

func BenchmarkGetMiss(b *testing.B) {
	keys := benchKeySet()
	e := filledEngine(b, keys[:benchKeys/2], 0)
	defer e.Close()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		buf := make([]byte, 0, 128)
		for pb.Next() {
			buf, _ = e.AppendGet(buf[:0], keys[benchKeys/2+i&(benchKeys/2-1)])
			i++
		}
	})
}
