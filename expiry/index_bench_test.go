package expiry

import (
	"fmt"
	"testing"
)

// BenchmarkPopDue pops the due items of a shard-sized expiry workload (156
// due items, the share of one of 64 shards of 10k) from an index alone and
// from one that also holds 15.6k not-yet-due items (a shard's share of 1M).
func BenchmarkPopDue(b *testing.B) {
	const due = 156
	for _, resident := range []int{0, 15_625} {
		b.Run(fmt.Sprintf("resident=%d", resident), func(b *testing.B) {
			x := NewIndex()
			for i := range resident {
				x.Add(Item{Deadline: 1<<40 + int64(i), Slot: uint32(i)})
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				for i := range due {
					x.Add(Item{Deadline: int64(i), Slot: uint32(resident + i)})
				}
				b.StartTimer()
				for {
					if _, ok := x.PopDue(1 << 30); !ok {
						break
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*due), "ns/item")
		})
	}
}
