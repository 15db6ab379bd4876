package engine

import "sync/atomic"

// slots is a shard's slot array (ents): slot → the arena offset of the
// slot's record + 1, 0 for a free slot. It is paged, slotPage words a
// page, so that growing it copies at most one page (the last, which
// grows by a quarter until it is full) and its memory is its slots plus
// less than a quarter of a page, where a slice grown by append carried up
// to a quarter of the slots unused (0.7 bytes an entry at a million
// entries). Only the shard's writers use it, under the exclusive lock
// (lock-free readers reach records through the table, and a record names
// its slot); words are still stored with atomic stores, as a record's
// header words are. The zero value is empty.
//
// It remembers one slot's word (remember): the slot of the key a writer
// last looked up, whose record it has just read and which it is about to
// change. get answers that slot from the copy, without reading its page,
// a cache miss of its own at a million entries (about a sixth of an
// overwrite's time in cmd/speed's 50/50 mix). Every store goes through
// set, which keeps the copy equal to the page; Check verifies it.
type slots struct {
	p [][]uint32
	n int // (len(p)-1)*slotPage + len(p[len(p)-1]), or 0
	// last is the remembered slot + 1 (0: none), lastWord its word.
	last, lastWord uint32
}

const (
	slotBits = 10
	slotPage = 1 << slotBits
)

// len is the number of slots, free ones included.
func (a *slots) len() int { return a.n }

// get returns slot i's word; i must be below len.
func (a *slots) get(i uint32) uint32 {
	if i+1 == a.last {
		return a.lastWord
	}
	return a.p[i>>slotBits][i&(slotPage-1)]
}

// set stores w as slot i's word, with an atomic store; i must be below
// len.
func (a *slots) set(i, w uint32) {
	atomic.StoreUint32(&a.p[i>>slotBits][i&(slotPage-1)], w)
	if i+1 == a.last {
		a.lastWord = w
	}
}

// remember makes get answer slot i from w, which must be its word.
func (a *slots) remember(i, w uint32) { a.last, a.lastWord = i+1, w }

// checkHint reports whether the remembered word is the slot's word.
func (a *slots) checkHint() bool {
	return a.last == 0 || int(a.last) <= a.n && a.p[(a.last-1)>>slotBits][(a.last-1)&(slotPage-1)] == a.lastWord
}

// push appends a free slot and returns it.
func (a *slots) push() uint32 {
	if len(a.p) == 0 || len(a.p[len(a.p)-1]) == slotPage {
		a.p = append(a.p, nil)
	}
	last := &a.p[len(a.p)-1]
	if len(*last) == cap(*last) {
		grown := make([]uint32, len(*last), min(slotPage, max(16, cap(*last)+cap(*last)/4)))
		copy(grown, *last)
		*last = grown
	}
	*last = append(*last, 0)
	a.n++
	return uint32(a.n - 1)
}

// zeroed returns an array of as many slots as a, all free.
func (a *slots) zeroed() slots {
	z := slots{p: make([][]uint32, len(a.p)), n: a.n}
	for i, pg := range a.p {
		z.p[i] = make([]uint32, len(pg), cap(pg))
	}
	return z
}
