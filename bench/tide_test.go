package bench

import (
	"testing"
	"time"

	"github.com/tidekv/tide/engine"
)

// BenchmarkTideOps isolates tide's single-operation costs on the
// throughput dataset (1M keys pre-filled, Zipf s=1.01 trace, one goroutine
// per P), for the engine owner's profiling: AppendGet with and without a
// TTL on the key, Set, SetTTL overwriting a key that has a TTL, and a miss.
func BenchmarkTideOps(b *testing.B) {
	d := Throughput(*flagKeys)
	for _, ttl := range []bool{false, true} {
		e, err := engine.New(engine.Config{})
		if err != nil {
			b.Fatal(err)
		}
		for i, k := range d.Stored {
			if ttl {
				e.SetTTL(k, d.Values[i], EntryTTL(i))
			} else {
				e.Set(k, d.Values[i])
			}
		}
		sfx := map[bool]string{false: "", true: "-ttl"}[ttl]
		run := func(name string, op func(buf []byte, k int) []byte) {
			b.Run(name+sfx, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := 0x9E3779B
					buf := make([]byte, 0, 256)
					for pb.Next() {
						buf = op(buf, int(d.Trace[i&(TraceLen-1)]))
						i++
					}
				})
			})
		}
		run("get", func(buf []byte, k int) []byte { buf, _ = e.AppendGet(buf[:0], d.Keys[k]); return buf })
		run("miss", func(buf []byte, k int) []byte { buf, _ = e.AppendGet(buf[:0], d.Missing[k]); return buf })
		if ttl {
			run("set", func(buf []byte, k int) []byte {
				e.SetTTL(d.Stored[k], d.Values[k], EntryTTL(k)+time.Duration(k&7))
				return buf
			})
		} else {
			run("set", func(buf []byte, k int) []byte { e.Set(d.Stored[k], d.Values[k]); return buf })
		}
		e.Close()
	}
}
