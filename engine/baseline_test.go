package engine

import (
	"sync"
	"sync/atomic"
	"testing"
)

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
	var seed atomic.Uint32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(7919))
		buf := make([]byte, 0, 128)
		for pb.Next() {
			v, _ := m.Load(keys[idx[i&(len(idx)-1)]])
			buf = append(buf[:0], v.([]byte)...)
			i++
		}
	})
}
