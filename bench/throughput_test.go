package bench

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

var (
	flagKeys   = flag.Int("keys", 1_000_000, "keys in the throughput workloads")
	flagPeers  = flag.String("peers", "", "comma-separated peers to run (default all)")
	flagRounds = flag.Int("rounds", 1, "repeat the whole peer sweep this many times, interleaving peers (sub-benchmark names get #01.. suffixes; cmd/report folds them)")
)

func selected(name string) bool {
	if *flagPeers == "" {
		return true
	}
	for _, p := range SplitComma(*flagPeers) {
		if p == name {
			return true
		}
	}
	return false
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
	Fill(c, d.Stored, d.Values, ttl)
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
					for _, m := range Mixes {
						b.Run("mix="+m.Name, func(b *testing.B) {
							c := instance(b, p, ttl)
							RunMix(b, c, d, d.Keys, m.Write, ttl, ReadAppend)
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
				RunMix(b, c, d, d.Missing, 0, false, ReadAppend)
			})
		}
		release()
	}
}
