package evict

import (
	"math/rand/v2"
	"testing"
)

// Shape of BenchmarkAccessZipf: the engine's bounded read-only throughput
// workload (bench, tide-capped): 1M keys of 144 accounted bytes spread
// over 64 shards by the hash's low bits, each shard's policy sized for its
// share of a cap 1.5× their size, read with Zipf s=1.01 popularity.
const (
	zipfShards  = 64
	zipfKeys    = 1 << 20
	zipfSize    = 16 + 64 + 64
	zipfSeqBits = 21
	zipfBatch   = 16 // about what one drain of a shard's read log hands over
	zipfHandle  = 1<<24 - 1
)

// zipfWorkload builds the shards' policies of spec, fills them with
// zipfKeys entries as the engine would (dense handles per shard), and
// returns them with a sequence of read hits in the order the engine hands
// them over: each shard's hits in batches of zipfBatch, a batch when the
// shard has logged that many. A hit is packed as shard<<24 | handle.
func zipfWorkload(spec Spec) ([]Policy, []uint32) {
	hint := int64(1.5*zipfKeys*zipfSize) / zipfShards
	ps := spec.NewShards(zipfShards, hint)
	next := make([]uint32, zipfShards)
	loc := make([]uint32, zipfKeys) // key → shard<<24 | handle
	for k := range zipfKeys {
		h := mix64(uint64(k) + 1)
		s := uint32(h % zipfShards)
		ps[s].Add(Handle(next[s]), Entry{Hash: h, Size: zipfSize})
		loc[k] = s<<24 | next[s]
		next[s]++
	}
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.01, 1, zipfKeys-1)
	seq := make([]uint32, 0, 1<<zipfSeqBits)
	pending := make([][]uint32, zipfShards)
	for len(seq) < cap(seq) {
		e := loc[z.Uint64()]
		s := e >> 24
		pending[s] = append(pending[s], e)
		if len(pending[s]) == zipfBatch {
			seq = append(seq, pending[s]...)
			pending[s] = pending[s][:0]
		}
	}
	return ps, seq[:cap(seq)]
}

// BenchmarkAccessZipf measures Access alone on the engine's bounded
// read-only Zipf workload (see zipfWorkload): about 1M tracked handles,
// so that most hits on all but the hottest keys miss the CPU cache on
// the policy's per-handle state and sketch, as in the engine.
func BenchmarkAccessZipf(b *testing.B) {
	for _, spec := range []Spec{Adaptive, TinyLFU, S3FIFO, AllKeysLRU} {
		b.Run(spec.Name, func(b *testing.B) {
			ps, seq := zipfWorkload(spec)
			mask := len(seq) - 1
			for _, e := range seq { // reach the steady state
				ps[e>>24].Access(Handle(e & zipfHandle))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				e := seq[i&mask]
				ps[e>>24].Access(Handle(e & zipfHandle))
			}
		})
	}
}
