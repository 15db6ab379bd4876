package evict

import "math/bits"

// sketch is a count-min sketch of 4-bit counters with periodic halving (the
// TinyLFU "reset"), laid out like Caffeine's: each key maps to one 64-byte
// block of 8 words and uses one 4-bit counter in each of 4 word pairs, so an
// update touches a single cache line. It holds about one word (16 counters)
// per cached entry. It is used under the shard write lock only.
type sketch struct {
	table     []uint64
	blockMask uint64 // number of blocks - 1
	additions int    // increments since the last reset
	period    int    // reset when additions reaches period
	n         int    // entries the sketch is sized for
}

// ensure sizes the sketch for about n entries. Growing doubles the table by
// copying it into both halves, which keeps every key's counters as they
// were (the block index gains one hash bit, and both choices hold a copy).
func (s *sketch) ensure(n int) {
	n = min(max(n, 8), 1<<26)
	want := 1 << bits.Len(uint(n-1)) // next power of two, in words
	if n > s.n {
		s.n = n
		s.period = 10 * n
	}
	if len(s.table) >= want {
		return
	}
	if len(s.table) == 0 {
		s.table = make([]uint64, want)
	} else {
		for len(s.table) < want {
			t := make([]uint64, 2*len(s.table))
			copy(t, s.table)
			copy(t[len(s.table):], s.table)
			s.table = t
		}
	}
	s.blockMask = uint64(len(s.table)/8 - 1)
}

func (s *sketch) block(hash uint64) (base uint64, h uint64) {
	h = mix64(hash)
	return (h & s.blockMask) * 8, mix64(h ^ 0x5bd1e9955bd1e995)
}

// frequency returns the estimated count of hash, 0..15.
func (s *sketch) frequency(hash uint64) uint32 {
	if len(s.table) == 0 {
		return 0
	}
	base, h := s.block(hash)
	f := uint32(15)
	for i := range uint64(4) {
		word := base + 2*i + (h>>(8*i))&1
		shift := ((h >> (8*i + 1)) & 15) * 4
		f = min(f, uint32(s.table[word]>>shift)&15)
	}
	return f
}

// increment adds one to hash's counters (those below 15) and halves every
// counter once period increments have been made.
func (s *sketch) increment(hash uint64) {
	if len(s.table) == 0 {
		return
	}
	base, h := s.block(hash)
	added := false
	for i := range uint64(4) {
		word := base + 2*i + (h>>(8*i))&1
		shift := ((h >> (8*i + 1)) & 15) * 4
		if (s.table[word]>>shift)&15 < 15 {
			s.table[word] += 1 << shift
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
	for i, w := range s.table {
		odd += bits.OnesCount64(w & 0x1111111111111111)
		s.table[i] = (w >> 1) & 0x7777777777777777
	}
	// Each key has 4 counters; halving loses half a count on odd ones.
	s.additions = max(0, s.additions-odd/4) / 2
}
