package engine

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
type slots struct {
	p [][]uint32
	n int // (len(p)-1)*slotPage + len(p[len(p)-1]), or 0
}

const (
	slotBits = 10
	slotPage = 1 << slotBits
)

// len is the number of slots, free ones included.
func (a *slots) len() int { return a.n }

// get returns slot i's word; i must be below len.
func (a *slots) get(i uint32) uint32 { return a.p[i>>slotBits][i&(slotPage-1)] }

// ptr returns slot i's word's address, for an atomic store.
func (a *slots) ptr(i uint32) *uint32 { return &a.p[i>>slotBits][i&(slotPage-1)] }

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
