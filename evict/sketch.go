package evict

import (
	"math/bits"
	"slices"
)

// sketchCounters is the number of 4-bit counters the sketch holds per entry
// it is sized for.
const sketchCounters = 16

// sketch is a count-min sketch of 4-bit counters with periodic halving (the
// TinyLFU "reset"), laid out like Caffeine's: each key maps to one 64-byte
// block of 8 words and uses one 4-bit counter in each of 4 word pairs, so an
// update touches a single cache line. Keys are fingerprints (see
// fingerprint).
//
// Sizing: the sketch holds sketchCounters counters per entry it is sized
// for (the capacity in entries), as Caffeine does, but in any number of
// blocks, not a power of two: a key's block is its mixed fingerprint
// scaled to the number of blocks (range reduction), so every block serves
// an equal share of the keys. Caffeine's rounding up to a power of two
// gives up to twice the counters (16.8 bytes an entry instead of 12 in a
// shard at two thirds of a cap of 23,400 entries), and those extra
// counters are worth 0.1 to 0.4 points of hit ratio on Zipf traces where
// the rounding added a third or more (zipf099 at 5k–50k entries,
// otterzipf at 5k–80k; 8 hash seeds). Sizing it for the entries held
// instead of the capacity, or with 8 counters per entry, cost 0.2 to 0.7
// points (0.4 on average on the LIRS traces), so the count per entry of
// capacity stays.
//
// Growth (the capacity estimate grew): a key's new block covers a range of
// mixed fingerprints that lies within at most two old blocks, and starts as
// the counter-wise maximum of them, so no key's estimate drops (the sketch
// stays an upper bound of the counts since the last reset); a key may gain
// the counts of another old block's keys until the next halvings fade them.
//
// The table is one array, replaced when it grows: by at least an eighth,
// so that a capacity estimate creeping up costs amortized O(1) per block;
// a sketch that grew in small steps thus has up to an eighth more counters
// than it needs.
//
// It is used under the shard write lock only.
type sketch struct {
	table     [][8]uint64
	blocks    int // len(table)
	additions int // increments since the last reset
	period    int // reset when additions reaches period
	n         int // entries the reset period is set for
}

// sketchMaxBlocks bounds the table (512 MiB).
const sketchMaxBlocks = 1 << 23

// sketchBlocks is the number of blocks a sketch for n entries needs.
func sketchBlocks(n int) int {
	return min(max((max(n, 1)*sketchCounters+127)/128, 1), sketchMaxBlocks)
}

// setPeriod makes the reset period 10 × n increments, n being the
// capacity in entries; the period only grows.
func (s *sketch) setPeriod(n int) {
	if n > s.n {
		s.n = n
		s.period = 10 * n
	}
}

// ensure sizes the table for at least n entries.
func (s *sketch) ensure(n int) {
	want := sketchBlocks(n)
	if s.blocks >= want {
		return
	}
	old := s.table
	if len(old) > 0 {
		want = min(max(want, len(old)+len(old)/8), sketchMaxBlocks)
	}
	t := slices.Grow([][8]uint64(nil), want) // the allocator's size class
	s.table = t[:cap(t)]
	s.blocks = len(s.table)
	if len(old) == 0 {
		return // all counters are zero: nothing to carry over
	}
	// New block b covers the fingerprints scaled into [b/blocks,
	// (b+1)/blocks), which old blocks lo..hi (at most two) cover.
	for b := range s.table {
		lo := b * len(old) / s.blocks
		hi := min(((b+1)*len(old)-1)/s.blocks, len(old)-1)
		blk := old[lo]
		if hi != lo {
			for i := range blk {
				blk[i] = nibbleMax(blk[i], old[hi][i])
			}
		}
		s.table[b] = blk
	}
}

// nibbleMax returns the 4-bit-wise maximum of a and b.
func nibbleMax(a, b uint64) uint64 {
	var m uint64
	for shift := 0; shift < 64; shift += 4 {
		m |= max(a>>shift&15, b>>shift&15) << shift
	}
	return m
}

// block returns fp's block and the hash bits that pick its counters.
func (s *sketch) block(fp uint32) (*[8]uint64, uint64) {
	h := mix64(uint64(fp))
	b, _ := bits.Mul64(h, uint64(s.blocks))
	return &s.table[b], mix64(h ^ 0x5bd1e9955bd1e995)
}

// frequency returns the estimated count of fp, 0..15.
func (s *sketch) frequency(fp uint32) uint32 {
	if s.blocks == 0 {
		return 0
	}
	blk, h := s.block(fp)
	f := uint32(15)
	for i := range uint64(4) {
		word := 2*i + (h>>(8*i))&1
		shift := ((h >> (8*i + 1)) & 15) * 4
		f = min(f, uint32(blk[word]>>shift)&15)
	}
	return f
}

// increment adds one to fp's counters (those below 15) and halves every
// counter once period increments have been made.
func (s *sketch) increment(fp uint32) {
	if s.blocks == 0 {
		return
	}
	blk, h := s.block(fp)
	added := false
	for i := range uint64(4) {
		word := 2*i + (h>>(8*i))&1
		shift := ((h >> (8*i + 1)) & 15) * 4
		if (blk[word]>>shift)&15 < 15 {
			blk[word] += 1 << shift
			added = true
		}
	}
	if added {
		s.additions++
		if s.additions >= s.period {
			s.reset()
		}
	}
}
func (s *sketch) reset() {
	odd := 0
	for b := range s.blocks {
		blk := &s.table[b]
		for i, w := range blk {
			odd += bits.OnesCount64(w & 0x1111111111111111)
			blk[i] = (w >> 1) & 0x7777777777777777
		}
	}
	// Each key has 4 counters; halving loses half a count on odd ones.
	s.additions = max(0, s.additions-odd/4) / 2
}
