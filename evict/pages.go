package evict

// pageBits sets the page length of the per-handle arrays: 1024 elements.
const (
	pageBits = 10
	pageLen  = 1 << pageBits
)

// pages is a growable array indexed by Handle, stored as pages of pageLen
// elements. Growing it copies at most one page (the last, which grows like
// a slice, by growLen, until it is full) and never the whole array, so a
// policy's memory is its tracked handles plus less than a quarter of a
// page, instead of up to a quarter (or, with append, double) of the
// handles. It holds one pointer per page for the collector to scan, and
// none per element. The zero value is empty.
type pages[T any] struct {
	p [][]T
	n int // addressable length: (len(p)-1)*pageLen + len(p[len(p)-1])
}

// len reports how many handles are addressable.
func (a *pages[T]) len() int { return a.n }

// at returns h's element; h must be below len.
func (a *pages[T]) at(h Handle) *T { return &a.p[h>>pageBits][h&(pageLen-1)] }

// copyFrom makes a a copy of src that shares no memory with it, reusing
// a's pages where they have room.
func (a *pages[T]) copyFrom(src *pages[T]) {
	if cap(a.p) < len(src.p) {
		a.p = append(a.p[:cap(a.p)], make([][]T, len(src.p)-cap(a.p))...)
	}
	a.p = a.p[:len(src.p)]
	for i := range src.p {
		a.p[i] = append(a.p[i][:0], src.p[i]...)
	}
	a.n = src.n
}

// grow makes h addressable, zeroing the new elements; it reports whether
// the length changed.
func (a *pages[T]) grow(h Handle) bool {
	if int(h) < a.n {
		return false
	}
	for int(h) >= a.n {
		if len(a.p) == 0 || len(a.p[len(a.p)-1]) == pageLen {
			a.p = append(a.p, nil)
		}
		last := &a.p[len(a.p)-1]
		base := (len(a.p) - 1) * pageLen
		want := min(pageLen, growLen(Handle(min(int(h)-base, pageLen-1)), len(*last)))
		t := make([]T, want)
		copy(t, *last)
		*last = t
		a.n = base + want
	}
	return true
}
