package evict

import "math/bits"

// sketchCounters is the number of 4-bit counters the sketch holds per entry
// it is sized for.
var sketchCounters = 16

// sketch is a count-min sketch of 4-bit counters with periodic halving (the
// TinyLFU "reset"), laid out like Caffeine's: each key maps to one 64-byte
// block of 8 words and uses one 4-bit counter in each of 4 word pairs, so an
// update touches a single cache line. Keys are fingerprints (see
// fingerprint). A key's block is picked by multiply-shift over the number
// of blocks, so the table need not be a power of two: it holds
// sketchCounters counters per entry it is sized for, rounded up to a
// block. It is used under the shard write lock only.
type sketch struct {
	table     []uint64
	blocks    uint64 // len(table) / 8
	additions int    // increments since the last reset
	period    int    // reset when additions reaches period
	n         int    // entries the reset period is set for
}

// sketchMaxWords bounds the table (512 MiB).
const sketchMaxWords = 1 << 26

func sketchWords(n int) int {
	w := (max(n, 1)*sketchCounters/16 + 7) &^ 7
	return min(max(w, 8), sketchMaxWords)
}

// setPeriod makes the reset period 10 × n increments, n being the
// capacity in entries; the period only grows.
func (s *sketch) setPeriod(n int) {
	if n > s.n {
		s.n = n
		s.period = 10 * n
	}
}

// ensure sizes the table for at least n entries. Growing it by a quarter or
// more maps each new block to the old block its hash range overlaps most
// and copies that block, so every key keeps its counters, except keys
// hashed near a block boundary, which take their neighbour's (as if they
// had collided). Doubling keeps every key's counters exactly.
func (s *sketch) ensure(n int) {
	want := sketchWords(n)
	if len(s.table) >= want {
		return
	}
	if len(s.table) > 0 {
		want = min(max(want, (len(s.table)+len(s.table)/4+7)&^7), sketchMaxWords)
	}
	t := make([]uint64, want)
	if old := s.blocks; old > 0 {
		nb := uint64(want / 8)
		for j := range nb {
			// The old block under the middle of new block j's hash range.
			i := ((2*j + 1) * old) / (2 * nb)
			copy(t[8*j:8*j+8], s.table[8*i:8*i+8])
		}
	}
	s.table = t
	s.blocks = uint64(want / 8)
}

func (s *sketch) block(fp uint32) (base uint64, h uint64) {
	h = mix64(uint64(fp))
	hi, _ := bits.Mul64(h, s.blocks)
	return hi * 8, mix64(h ^ 0x5bd1e9955bd1e995)
}

// frequency returns the estimated count of fp, 0..15.
func (s *sketch) frequency(fp uint32) uint32 {
	if len(s.table) == 0 {
		return 0
	}
	base, h := s.block(fp)
	f := uint32(15)
	for i := range uint64(4) {
		word := base + 2*i + (h>>(8*i))&1
		shift := ((h >> (8*i + 1)) & 15) * 4
		f = min(f, uint32(s.table[word]>>shift)&15)
	}
	return f
}

// increment adds one to fp's counters (those below 15) and halves every
// counter once period increments have been made.
func (s *sketch) increment(fp uint32) {
	if len(s.table) == 0 {
		return
	}
	base, h := s.block(fp)
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
