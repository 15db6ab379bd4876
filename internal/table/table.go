// Package table is tide's per-shard hash index: an open-addressing table with
// linear probing that maps a 64-bit key hash to a 32-bit value (the engine
// stores where the key's record lies, so that a lookup goes from the
// table word straight to the record).
//
// Layout: one []uint64 whose words pack a 32-bit tag (the high half of the
// key hash) and value+1 (0 marks an empty word; a value is below 2³²−1). The home position of a word
// is derived from its tag alone, by range reduction (tag × len / 2^32, see
// Home), so the array may have any length, and the table can grow and
// delete (by backward shift, no tombstones) without consulting the entries.
// Probes run forward and wrap from the last word to the first. Each cluster
// of occupied words is kept in the order of their homes (Robin Hood
// linear probing: an insert goes after the words homed at or before its
// home, shifting the rest forward), so a probe stops at the first word
// homed after its own, not only at an empty word: a miss examines about
// as many words as a hit (3.0 against 2.6 at a load of 0.76; plain linear
// probing's miss examined 5.3 at a load of 0.66), which is what lets the
// load be high. The table holds no pointers, so the garbage collector
// never scans it.
//
// The table does not know keys: Find yields every value whose tag matches and
// the caller confirms the key. Two keys with equal tags simply occupy two
// words.
//
// Sizing: the load factor is kept at or below 13/16 (maxLoad). A table
// that would pass it grows by an eighth (doubling while it is small, up
// to growSteps words), so a table that stops growing sits at a load
// between 0.72 and 0.81, about 10.4 bytes per entry. A limit of 3/4 kept
// it between 2/3 and 3/4 (11.3 bytes) for probes of 2.0 words a hit and
// 2.3 a miss instead of 2.6 and 3.0 at a load of 0.76 (a shard of 15,625
// entries): about 5% more hits read a second cache line. A power-of-two
// table (doubling) sat anywhere between 3/8 and 3/4, 14 bytes on average
// and 16.8 at some sizes. Growing by an eighth rehashes each word about
// eight times over the life of a growing table instead of once: amortized
// O(1), a fixed cost per insert. A table less than an eighth full shrinks
// to a load of about 3/8.
//
// A Table is not safe for concurrent mutation; the engine guards it with its
// shard lock. Concurrent Find calls are safe. Every store to a word of the
// live array is atomic, so a lock-free reader may probe Words (Home, then
// Goes and Step, loading each word atomically) while one writer mutates
// the table: it gets a possibly
// inconsistent view (which the engine detects with its shard sequence
// count), never a data race.
package table

import (
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"
)

const (
	minSize = 8
	// growSteps: a table smaller than this many words doubles; a larger
	// one grows by an eighth.
	growSteps = 1024
)

// Table maps tags to values. The zero value is an empty table ready to use.
type Table struct {
	words []uint64
	n     int // occupied words
}

// Tag is the part of a key hash the table stores.
func Tag(hash uint64) uint32 { return uint32(hash >> 32) }

// home is the word where a probe for tag starts in an array of n words:
// floor(tag × n / 2^32), which is below n for every n.
func home(tag uint32, n int) int {
	hi, _ := bits.Mul64(uint64(tag)<<32, uint64(n))
	return int(hi)
}

func (t *Table) home(tag uint32) int { return home(tag, len(t.words)) }

// dist is how many words j lies after h in an array of n words, cyclically:
// the displacement of a word at j whose home is h.
func dist(h, j, n int) int {
	if d := j - h; d >= 0 {
		return d
	}
	return j - h + n
}

// next is the word after i in an array of n words.
func next(i, n int) int {
	if i++; i == n {
		return 0
	}
	return i
}

// Len returns the number of values stored.
func (t *Table) Len() int { return t.n }

// Cap returns the number of words allocated.
func (t *Table) Cap() int { return len(t.words) }

// Find calls match for each value stored under tag, in probe order, until
// match returns true; it returns that value and true, or false if none
// matched. match must not modify the table.
func (t *Table) Find(tag uint32, match func(v uint32) bool) (uint32, bool) {
	for i := t.Start(tag); ; {
		s, ok := t.Next(tag, &i)
		if !ok || match(s) {
			return s, ok
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
// returns its value, or returns false at the end of the probe sequence.
func (t *Table) Next(tag uint32, i *int) (uint32, bool) {
	if *i < 0 {
		return 0, false
	}
	words := t.words
	h := t.home(tag)
	for j := *i; ; j = next(j, len(words)) {
		w := words[j]
		if w == 0 {
			break
		}
		if wt := uint32(w >> 32); wt == tag {
			*i = next(j, len(words))
			return uint32(w) - 1, true
		} else if (wt > tag || j < h) && passed(w, tag, h, j, len(words)) {
			break
		}
	}
	*i = -1
	return 0, false
}

// passed reports whether a probe from home h that reached word w at j can
// stop: w's home lies after h, and the table keeps each cluster in the
// order of its words' homes, so no word homed at h lies further on.
// Homes grow with tags, so a word with a smaller tag than the probe's, met
// before the probe wrapped (j >= h), is homed at or before h: the probes
// test that inline and call passed only otherwise.
func passed(w uint64, tag uint32, h, j, n int) bool {
	if uint32(w>>32) < tag && j >= h {
		return false
	}
	return dist(home(uint32(w>>32), n), j, n) < dist(h, j, n)
}

// Words returns the table's word array for a lock-free reader (a probe
// written with Home, Goes and Step).
// The table replaces the array when it resizes; a reader holding an old one
// reads stale words, never freed memory.
func (t *Table) Words() []uint64 { return t.words }

// Goes reports whether a probe for tag, started at home h, goes on past
// the word w it found at j in words of length n (w is not empty and holds
// another tag): false once it has passed every word homed at h. With Home
// and Step it lets a lock-free reader write Next's loop inline over Words,
// with the home computed once and each word read with an atomic load (the
// engine's reader does; the tests' loadNext is the same loop).
func Goes(w uint64, tag uint32, h, j, n int) bool {
	return !((uint32(w>>32) > tag || j < h) && passed(w, tag, h, j, n))
}

// Step is the index after i in words of length n, wrapping to 0.
func Step(i, n int) int { return next(i, n) }

// Home is where a probe for tag starts in words (from Words); -1 if words
// is empty.
func Home(words []uint64, tag uint32) int {
	if len(words) == 0 {
		return -1
	}
	return home(tag, len(words))
}

// Ahead returns the index of the word d words after word i in words (from
// Words), wrapping as a probe does, for a caller that warms a probe's later
// words; words must not be empty.
func Ahead(words []uint64, i, d int) int { return (i + d) % len(words) }

// Touch loads the word where a probe for tag starts and returns it, so
// that a caller can warm the cache line before it needs it.
func (t *Table) Touch(tag uint32) uint64 {
	if len(t.words) == 0 {
		return 0
	}
	return t.words[t.home(tag)]
}

// Insert stores v under tag. The caller ensures the pair is not already
// stored. It grows the table first if it is full.
func (t *Table) Insert(tag uint32, v uint32) {
	if t.Full() {
		t.Grow()
	}
	t.put(tag, v)
	t.n++
}

// Full reports whether the next Insert must grow the table (the load
// would pass maxLoad).
func (t *Table) Full() bool { return (t.n+1)*maxLoadDen > len(t.words)*maxLoadNum }

// maxLoad, maxLoadNum / maxLoadDen, is the highest load a table takes:
// 13/16.
const (
	maxLoadNum = 13
	maxLoadDen = 16
)

// Grow moves the table into a larger array, rehashing every word: time
// proportional to the table. It only reads the old array, so a lock-free
// reader holding it (Words) keeps reading a table that does not change.
func (t *Table) Grow() { t.resize(grown(len(t.words))) }

// grown is the size a table of n words grows to.
func grown(n int) int {
	if n < growSteps {
		return max(minSize, 2*n)
	}
	return n + n/8
}

// put stores the word for (tag, v) after the words homed at or before
// its home and before those homed after it (Robin Hood order), shifting
// the rest of the cluster forward by one word. The shift stores from the
// cluster's end backward, so a concurrent forward probe sees every word
// (some twice), though the engine validates such a probe anyway.
func (t *Table) put(tag uint32, v uint32) {
	n := len(t.words)
	h := t.home(tag)
	i := h
	for w := t.words[i]; w != 0 && !passed(w, tag, h, i, n); w = t.words[i] {
		i = next(i, n)
	}
	e := i
	for t.words[e] != 0 {
		e = next(e, n)
	}
	for e != i {
		p := e - 1
		if p < 0 {
			p = n - 1
		}
		atomic.StoreUint64(&t.words[e], t.words[p])
		e = p
	}
	atomic.StoreUint64(&t.words[i], uint64(tag)<<32|uint64(v+1))
}

// Delete removes the pair (tag, v) and reports whether it was present.
func (t *Table) Delete(tag uint32, v uint32) bool {
	if len(t.words) == 0 {
		return false
	}
	want := uint64(tag)<<32 | uint64(v+1)
	n := len(t.words)
	h := t.home(tag)
	i := h
	for {
		w := t.words[i]
		if w == 0 || (uint32(w>>32) != tag && passed(w, tag, h, i, n)) {
			return false
		}
		if w == want {
			break
		}
		i = next(i, n)
	}
	// Backward-shift deletion: pull the following words of the cluster
	// back by one until a word at its home (or an empty one); the words
	// stay in the order of their homes.
	for {
		j := next(i, n)
		w := t.words[j]
		if w == 0 || t.home(uint32(w>>32)) == j {
			break
		}
		atomic.StoreUint64(&t.words[i], w)
		i = j
	}
	atomic.StoreUint64(&t.words[i], 0)
	t.n--
	if t.n == 0 {
		t.words = nil
	} else if n > 64 && t.n*8 < n {
		t.resize(max(minSize, t.n*8/3))
	}
	return true
}

// Replace changes the value stored for (tag, old) to new.
func (t *Table) Replace(tag uint32, old, new uint32) bool {
	if len(t.words) == 0 {
		return false
	}
	want := uint64(tag)<<32 | uint64(old+1)
	n := len(t.words)
	h := t.home(tag)
	for i := h; t.words[i] != 0 && (uint32(t.words[i]>>32) == tag || !passed(t.words[i], tag, h, i, n)); i = next(i, n) {
		if t.words[i] == want {
			atomic.StoreUint64(&t.words[i], uint64(tag)<<32|uint64(new+1))
			return true
		}
	}
	return false
}

// Reset empties the table and releases its memory.
func (t *Table) Reset() { *t = Table{} }

// resize rehashes the table into a new array of at least size words (the
// allocator's size class, which it would round up to anyway).
func (t *Table) resize(size int) {
	old := t.words
	w := slices.Grow([]uint64(nil), size)
	t.words = w[:cap(w)]
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
	n := len(t.words)
	for i, w := range t.words {
		if w == 0 {
			continue
		}
		d := (i-t.home(uint32(w>>32))+n)%n + 1
		total += d
		longest = max(longest, d)
	}
	return total, longest
}

// MissProbes returns how many words a probe for tag examines before it
// stops (at an empty word or one homed after tag's home, that word
// included): the cost of looking up an absent key with this tag.
func (t *Table) MissProbes(tag uint32) int {
	if len(t.words) == 0 {
		return 0
	}
	n := len(t.words)
	h := t.home(tag)
	probes := 1
	for i := h; t.words[i] != 0 && (uint32(t.words[i]>>32) == tag || !passed(t.words[i], tag, h, i, n)); i = next(i, n) {
		probes++
	}
	return probes
}

// Check verifies the table's invariants: the count of occupied words, the
// load limit, and the Robin Hood order (every word lies at or after its
// home, with no empty word between, and no word lies after one homed
// later within its cluster). Cost O(Cap).
func (t *Table) Check() error {
	n := len(t.words)
	used := 0
	for j, w := range t.words {
		if w == 0 {
			continue
		}
		used++
		h := t.home(uint32(w >> 32))
		for k := h; k != j; k = next(k, n) {
			if t.words[k] == 0 {
				return fmt.Errorf("table: word %d (home %d) lies past the empty word %d", j, h, k)
			}
		}
		p := j - 1
		if p < 0 {
			p = n - 1
		}
		if pw := t.words[p]; pw != 0 && j != h && dist(t.home(uint32(pw>>32)), j, n) < dist(h, j, n) {
			return fmt.Errorf("table: word %d (home %d) follows word %d homed after it", j, h, p)
		}
	}
	if used != t.n {
		return fmt.Errorf("table: %d words occupied, count %d", used, t.n)
	}
	if n > 0 && t.n*maxLoadDen > n*maxLoadNum {
		return fmt.Errorf("table: %d words occupied of %d: load above %d/%d", t.n, n, maxLoadNum, maxLoadDen)
	}
	return nil
}

// Remap replaces every stored value v by fn(v) (which must be below
// 2³²−1), in a new array: homes depend on tags only, so every word keeps
// its place and the table its invariants. A lock-free reader holding the
// old array (Words) keeps reading it unchanged. fn must not modify the
// table. Cost O(Cap).
func (t *Table) Remap(fn func(v uint32) uint32) {
	w := make([]uint64, len(t.words))
	for i, x := range t.words {
		if x != 0 {
			w[i] = x&^(1<<32-1) | uint64(fn(uint32(x)-1)+1)
		}
	}
	t.words = w
}

// Each calls fn for every stored pair, in table order.
func (t *Table) Each(fn func(tag uint32, v uint32)) {
	for _, w := range t.words {
		if w != 0 {
			fn(uint32(w>>32), uint32(w)-1)
		}
	}
}
