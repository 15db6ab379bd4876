package bench

import (
	"flag"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
)

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

var (
	flagKeys   = flag.Int("keys", 1_000_000, "keys in the throughput workloads")
	flagPeers  = flag.String("peers", "", "comma-separated peers to run (default all)")
	flagRounds = flag.Int("rounds", 1, "repeat the whole peer sweep this many times, interleaving peers (sub-benchmark names get #01.. suffixes; cmd/report folds them)")
)

func selected(name string) bool {
	if *flagPeers == "" {
		return true
	}
	for _, p := range splitComma(*flagPeers) {
		if p == name {
			return true
		}
	}
	return false
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// cur is the one pre-filled cache alive at a time: sub-benchmarks of the
// same peer reuse it, and it is released (and the heap collected) before
// the next peer is built, so peers never share a heap.
var cur struct {
	key string
	c   Cache
}

func instance(b *testing.B, p Peer, ttl bool) Cache {
	key := p.Name + "/" + strconv.FormatBool(ttl)
	if cur.key == key {
		return cur.c
	}
	release()
	d := Throughput(*flagKeys)
	o := Options{Entries: len(d.Keys), KeyLen: KeyLen, ValueLen: ValueLen}
	if ttl {
		o.GlobalTTL = EntryTTL(0)
	}
	b.StopTimer()
	c := p.New(o)
	Fill(c, d.Keys, d.Value, ttl)
	if n := c.Len(); n >= 0 && n != len(d.Keys) {
		b.Logf("%s holds %d of %d keys after the fill", p.Name, n, len(d.Keys))
	}
	runtime.GC()
	b.StartTimer()
	cur.key, cur.c = key, c
	return c
}

func release() {
	if cur.c != nil {
		cur.c.Close()
		cur.key, cur.c = "", nil
		runtime.GC()
	}
}

var mixes = []struct {
	name  string
	write uint8 // percent of writes
}{{"100-0", 0}, {"90-10", 10}, {"75-25", 25}, {"50-50", 50}}

// BenchmarkThroughput: 1M keys, Zipf s=1.01, cache pre-filled and large
// enough to hold all; read/write mixes; without and with per-entry TTLs.
func BenchmarkThroughput(b *testing.B) {
	d := Throughput(*flagKeys)
	for range *flagRounds {
		throughputRound(b, d)
	}
	release()
}

func throughputRound(b *testing.B, d *Dataset) {
	for _, ttl := range []bool{false, true} {
		b.Run("ttl="+map[bool]string{false: "off", true: "on"}[ttl], func(b *testing.B) {
			for _, p := range Peers {
				if !selected(p.Name) || (ttl && p.Caps.TTL == NoTTL) {
					continue
				}
				b.Run("peer="+p.Name, func(b *testing.B) {
					for _, m := range mixes {
						b.Run("mix="+m.name, func(b *testing.B) {
							c := instance(b, p, ttl)
							runMix(b, c, d, d.Keys, m.write, ttl)
						})
					}
				})
			}
		})
	}
}

// BenchmarkMiss: Get of keys that are not in the (pre-filled) cache, Zipf.
func BenchmarkMiss(b *testing.B) {
	d := Throughput(*flagKeys)
	for range *flagRounds {
		for _, p := range Peers {
			if !selected(p.Name) {
				continue
			}
			b.Run("peer="+p.Name, func(b *testing.B) {
				c := instance(b, p, false)
				runMix(b, c, d, d.Missing, 0, false)
			})
		}
		release()
	}
}

func runMix(b *testing.B, c Cache, d *Dataset, keys []string, write uint8, ttl bool) {
	b.ReportAllocs()
	var gid atomic.Int64
	var hits, reads atomic.Int64
	b.ResetTimer()
	cpu0 := cpuNanos()
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine walks the shared trace from its own offset.
		i := int(gid.Add(1)) * 0x9E3779B
		buf := make([]byte, 0, 256)
		var h, r int64
		for pb.Next() {
			j := i & (TraceLen - 1)
			i++
			k := int(d.Trace[j])
			if d.Ops[j] < write {
				if ttl {
					c.SetTTL(keys[k], d.Value, EntryTTL(k))
				} else {
					c.Set(keys[k], d.Value)
				}
				continue
			}
			var ok bool
			buf, ok = c.Get(buf[:0], keys[k])
			r++
			if ok {
				h++
			}
		}
		hits.Add(h)
		reads.Add(r)
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N), "cpu-ns/op")
	if r := reads.Load(); r > 0 {
		b.ReportMetric(100*float64(hits.Load())/float64(r), "hit%")
	}
}
