package table

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkLookupLarge: lookups of present (hit) and absent (miss) random
// tags in a table of 1M entries (past the CPU caches), as in a shard of a
// large engine: the table's probe cost, memory latency included.
func BenchmarkLookupLarge(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(5, 6))
	tags := make([]uint32, n)
	var tab Table
	for i := range tags {
		tags[i] = r.Uint32()
		tab.Insert(tags[i], uint32(i))
	}
	absent := make([]uint32, n)
	for i := range absent {
		absent[i] = r.Uint32()
	}
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(r.IntN(n))
	}
	for _, c := range []struct {
		name string
		tags []uint32
	}{{"hit", tags}, {"miss", absent}} {
		b.Run(c.name, func(b *testing.B) {
			found := 0
			for i := range b.N {
				k := c.tags[order[i&(n-1)]]
				for j := tab.Start(k); ; {
					s, ok := tab.Next(k, &j)
					if !ok {
						break
					}
					if s < n {
						found++
						break
					}
				}
			}
			_ = found
		})
	}
}
