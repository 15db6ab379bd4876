// Package table is tide's per-shard hash index: an open-addressing table with
// linear probing that maps a 64-bit key hash to a 32-bit slot number.
//
// Layout: one []uint64 whose words pack a 32-bit tag (the high half of the
// key hash) and slot+1 (0 marks an empty word). The home position of a word
// is derived from its tag alone, so the table can grow and delete (by
// backward shift, no tombstones) without consulting the entries. The table
// holds no pointers, so the garbage collector never scans it.
//
// The table does not know keys: Find yields every slot whose tag matches and
// the caller confirms the key. Two keys with equal tags simply occupy two
// words. Load factor is kept at or below 3/4; memory is 8 bytes per word, on
// average about 14 bytes per entry.
//
// A Table is not safe for concurrent mutation; the engine guards it with its
// shard lock. Concurrent Find calls are safe. Every store to a word of the
// live array is atomic, so a lock-free reader may probe Words with
// LoadNext while one writer mutates the table: it gets a possibly
// inconsistent view (which the engine detects with its shard sequence
// count), never a data race.
package table

import "sync/atomic"

const minSize = 8

// Table maps tags to slots. The zero value is an empty table ready to use.
type Table struct {
	words []uint64
	n     int // occupied words
}

// Tag is the part of a key hash the table stores.
func Tag(hash uint64) uint32 { return uint32(hash >> 32) }

func (t *Table) home(tag uint32) int { return int(tag) & (len(t.words) - 1) }

// Len returns the number of slots stored.
func (t *Table) Len() int { return t.n }

// Cap returns the number of words allocated.
func (t *Table) Cap() int { return len(t.words) }

// Find calls match for each slot stored under tag, in probe order, until
// match returns true; it returns that slot and true, or false if none
// matched. match must not modify the table.
func (t *Table) Find(tag uint32, match func(slot uint32) bool) (uint32, bool) {
	if len(t.words) == 0 {
		return 0, false
	}
	mask := len(t.words) - 1
	for i := t.home(tag); ; i = (i + 1) & mask {
		w := t.words[i]
		if w == 0 {
			return 0, false
		}
		if uint32(w>>32) == tag {
			s := uint32(w) - 1
			if match(s) {
				return s, true
			}
		}
	}
}

// Probe is an iterator form of Find that avoids a closure on the hot path:
// start with i := t.Start(tag), then call t.Next(tag, &i) until it returns
// false.
func (t *Table) Start(tag uint32) int {
	if len(t.words) == 0 {
		return -1
	}
	return t.home(tag)
}

// Next advances the probe at *i to the next word stored under tag and
// returns its slot, or returns false at the end of the probe sequence.
func (t *Table) Next(tag uint32, i *int) (uint32, bool) {
	if *i < 0 {
		return 0, false
	}
	mask := len(t.words) - 1
	for j := *i; ; j = (j + 1) & mask {
		w := t.words[j]
		if w == 0 {
			*i = -1
			return 0, false
		}
		if uint32(w>>32) == tag {
			*i = (j + 1) & mask
			return uint32(w) - 1, true
		}
	}
}

// Words returns the table's word array for a lock-free reader (LoadNext).
// The table replaces the array when it resizes; a reader holding an old one
// reads stale words, never freed memory.
func (t *Table) Words() []uint64 { return t.words }

// LoadNext is Next over words (from Words) read with atomic loads, for a
// reader that does not hold the writer's lock. A probe under concurrent
// mutation may skip or repeat words; it gives up (false, with *i = -1)
// after len(words) words. Start the probe at Home(words, tag).
func LoadNext(words []uint64, tag uint32, i *int) (uint32, bool) {
	if *i < 0 || len(words) == 0 {
		return 0, false
	}
	mask := len(words) - 1
	j := *i & mask
	for range len(words) {
		w := atomic.LoadUint64(&words[j])
		if w == 0 {
			break
		}
		if uint32(w>>32) == tag {
			*i = (j + 1) & mask
			return uint32(w) - 1, true
		}
		j = (j + 1) & mask
	}
	*i = -1
	return 0, false
}

// Home is where a probe for tag starts in words (from Words).
func Home(words []uint64, tag uint32) int { return int(tag) & (len(words) - 1) }

// Touch loads the word where a probe for tag starts and returns it, so
// that a caller can warm the cache line before it needs it.
func (t *Table) Touch(tag uint32) uint64 {
	if len(t.words) == 0 {
		return 0
	}
	return t.words[t.home(tag)]
}

// Insert stores slot under tag. The caller ensures the pair is not already
// stored.
func (t *Table) Insert(tag uint32, slot uint32) {
	if (t.n+1)*4 > len(t.words)*3 {
		t.resize(max(minSize, len(t.words)*2))
	}
	t.put(tag, slot)
	t.n++
}

func (t *Table) put(tag uint32, slot uint32) {
	mask := len(t.words) - 1
	i := t.home(tag)
	for t.words[i] != 0 {
		i = (i + 1) & mask
	}
	atomic.StoreUint64(&t.words[i], uint64(tag)<<32|uint64(slot+1))
}

// Delete removes the pair (tag, slot) and reports whether it was present.
func (t *Table) Delete(tag uint32, slot uint32) bool {
	if len(t.words) == 0 {
		return false
	}
	want := uint64(tag)<<32 | uint64(slot+1)
	mask := len(t.words) - 1
	i := t.home(tag)
	for {
		w := t.words[i]
		if w == 0 {
			return false
		}
		if w == want {
			break
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: pull later words of the cluster into the
	// hole when the hole lies between their home and their position.
	j := i
	for {
		j = (j + 1) & mask
		w := t.words[j]
		if w == 0 {
			break
		}
		h := t.home(uint32(w >> 32))
		// Move w into i unless its home lies cyclically in (i, j].
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			atomic.StoreUint64(&t.words[i], w)
			i = j
		}
	}
	atomic.StoreUint64(&t.words[i], 0)
	t.n--
	if t.n == 0 {
		t.words = nil
	} else if len(t.words) > 64 && t.n*8 < len(t.words) {
		t.resize(len(t.words) / 2)
	}
	return true
}

// Replace changes the slot stored for (tag, old) to new.
func (t *Table) Replace(tag uint32, old, new uint32) bool {
	if len(t.words) == 0 {
		return false
	}
	want := uint64(tag)<<32 | uint64(old+1)
	mask := len(t.words) - 1
	for i := t.home(tag); t.words[i] != 0; i = (i + 1) & mask {
		if t.words[i] == want {
			atomic.StoreUint64(&t.words[i], uint64(tag)<<32|uint64(new+1))
			return true
		}
	}
	return false
}

// Reset empties the table and releases its memory.
func (t *Table) Reset() { *t = Table{} }

func (t *Table) resize(size int) {
	old := t.words
	t.words = make([]uint64, size)
	for _, w := range old {
		if w != 0 {
			t.put(uint32(w>>32), uint32(w)-1)
		}
	}
}

// ProbeStats measures the table's probe chains: a word stored d words
// after its home costs d+1 probes to find (and cost as much to insert).
// It returns the sum of those costs over the stored words and the largest
// one. Cost O(Cap).
func (t *Table) ProbeStats() (total, longest int) {
	mask := len(t.words) - 1
	for i, w := range t.words {
		if w == 0 {
			continue
		}
		d := (i-t.home(uint32(w>>32)))&mask + 1
		total += d
		longest = max(longest, d)
	}
	return total, longest
}

// MissProbes returns how many words a probe for tag examines before it
// stops at an empty word (that word included): the cost of looking up an
// absent key with this tag.
func (t *Table) MissProbes(tag uint32) int {
	if len(t.words) == 0 {
		return 0
	}
	mask := len(t.words) - 1
	n := 1
	for i := t.home(tag); t.words[i] != 0; i = (i + 1) & mask {
		n++
	}
	return n
}

// Each calls fn for every stored pair, in table order.
func (t *Table) Each(fn func(tag uint32, slot uint32)) {
	for _, w := range t.words {
		if w != 0 {
			fn(uint32(w>>32), uint32(w)-1)
		}
	}
}
