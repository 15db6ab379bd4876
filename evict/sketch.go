package evict

import "math/bits"

// sketchCounters is the number of 4-bit counters the sketch holds per entry
// it is sized for, before rounding up to a power of two.
const sketchCounters = 16

// sketch is a count-min sketch of 4-bit counters with periodic halving (the
// TinyLFU "reset"), laid out like Caffeine's: each key maps to one 64-byte
// block of 8 words and uses one 4-bit counter in each of 4 word pairs, so an
// update touches a single cache line. Keys are fingerprints (see
// fingerprint).
//
// Sizing: the sketch holds sketchCounters counters per entry it is sized
// for (the capacity in entries), rounded up to a power of two blocks, as
// Caffeine sizes it for an unweighted cache, in pages (see pages). Sized
// for the entries held instead (Caffeine's and otter's rule for a weighted
// cache), it is half as large in a shard that stops two thirds full, but
// a filling shard spends the fill's second half with half the counters and
// then splits them: adaptive lost 0.21 points on P3 at 25,000 entries,
// 0.17 at 100,000 and 0.12 on multi3 at 500 (cmd/hitseeds, 3 seeds),
// which put those rows below otter; resetting the counts at each split
// instead cost multi3 500 0.17 and Corda+loop+Corda 1250 0.12. Without
// the rounding it cost 0.1 to 0.4 points of hit ratio on Zipf traces,
// where the rounding adds 31–64% more counters (and 8 counters per entry
// cost 0.4 on average on the LIRS traces).
// Blocks are addressed by linear hashing, so the sketch could grow one
// block at a time; at power-of-two sizes it doubles. Growth keeps every
// key's counts exactly: with 2^level ≤ blocks < 2^(level+1), a key's block is
// its mixed fingerprint modulo 2^(level+1), or modulo 2^level if that is
// not a block yet; the new block number 2^level + i takes the keys of
// block i whose bit level is set, and starts as a copy of block i, which
// keeps its copy (both hold the counts of all of block i's keys, as
// before the split). Blocks not yet split this round serve twice as many
// keys as split ones.
//
// It is used under the shard write lock only.
type sketch struct {
	table     pages[[8]uint64]
	blocks    int // table.len() once allocated
	level     uint
	additions int // increments since the last reset
	period    int // reset when additions reaches period
	n         int // entries the reset period is set for
}

// sketchMaxBlocks bounds the table (512 MiB).
const sketchMaxBlocks = 1 << 23

func sketchBlocks(n int) int {
	b := min(max((max(n, 1)*sketchCounters+127)/128, 1), sketchMaxBlocks)
	return 1 << bits.Len(uint(b-1))
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
	if s.blocks == 0 {
		// All counters are zero: no block to split.
		s.table.grow(Handle(want - 1))
		s.blocks = want
		s.level = uint(bits.Len(uint(want)) - 1)
		return
	}
	s.table.grow(Handle(want - 1))
	for s.blocks < want {
		half := 1 << s.level
		*s.table.at(Handle(s.blocks)) = *s.table.at(Handle(s.blocks - half))
		s.blocks++
		if s.blocks == 2*half {
			s.level++
		}
	}
}

// block returns fp's block and the hash bits that pick its counters.
func (s *sketch) block(fp uint32) (*[8]uint64, uint64) {
	h := mix64(uint64(fp))
	b := h & (2<<s.level - 1)
	if b >= uint64(s.blocks) {
		b &= 1<<s.level - 1
	}
	return s.table.at(Handle(b)), mix64(h ^ 0x5bd1e9955bd1e995)
}

// frequency returns the estimated count of fp, 0..15.
func (s *sketch) frequency(fp uint32) uint32 {
	if s.blocks == 0 {
		return 0
	}
	blk, h := s.block(fp)
	return uint32(min(counter(blk, h, 0), counter(blk, h, 1), counter(blk, h, 2), counter(blk, h, 3)))
}

// counterAt returns the word and bit shift of a key's counter i (0..3)
// in its block, for the key's hash bits h (see block): a key has one
// 4-bit counter in each of the block's 4 word pairs, the i-th in word 2i
// or 2i+1 by bit 8i of h, at the position bits 8i+1..8i+4 give.
func counterAt(h uint64, i uint) (word, shift uint) {
	return (2*i + uint(h>>(8*i))&1) & 7, uint(h>>(8*i+1)) & 15 * 4
}

// counter returns the value of counter i (0..3) of blk for h.
func counter(blk *[8]uint64, h uint64, i uint) uint64 {
	w, sh := counterAt(h, i)
	return blk[w] >> sh & 15
}

// increment adds one to fp's counters (those below 15) and halves every
// counter once period increments have been made.
func (s *sketch) increment(fp uint32) {
	if s.blocks == 0 {
		return
	}
	blk, h := s.block(fp)
	// Unrolled and without a branch per counter: a counter adds
	// 1-(c+1)>>4, which is 1 below 15 and 0 at 15.
	w0, s0 := counterAt(h, 0)
	w1, s1 := counterAt(h, 1)
	w2, s2 := counterAt(h, 2)
	w3, s3 := counterAt(h, 3)
	a0 := 1 - (blk[w0]>>s0&15+1)>>4
	a1 := 1 - (blk[w1]>>s1&15+1)>>4
	a2 := 1 - (blk[w2]>>s2&15+1)>>4
	a3 := 1 - (blk[w3]>>s3&15+1)>>4
	if a0|a1|a2|a3 == 0 {
		return // all 4 saturated: the block is not written
	}
	// The 4 counters are in 4 different words.
	blk[w0] += a0 << s0
	blk[w1] += a1 << s1
	blk[w2] += a2 << s2
	blk[w3] += a3 << s3
	s.additions++
	if s.additions >= s.period {
		s.reset()
	}
}

func (s *sketch) reset() {
	odd := 0
	for b := range s.blocks {
		blk := s.table.at(Handle(b))
		for i, w := range blk {
			odd += bits.OnesCount64(w & 0x1111111111111111)
			blk[i] = (w >> 1) & 0x7777777777777777
		}
	}
	// Each key has 4 counters; halving loses half a count on odd ones.
	s.additions = max(0, s.additions-odd/4) / 2
}
