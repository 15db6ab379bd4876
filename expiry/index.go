// Package expiry is tide's expiration machinery: a deadline-ordered index of
// the entries that carry a TTL, and the active expiry cycle that reclaims due
// entries from the front of that index with bounded work per cycle.
//
// Expiry in tide is logically exact and physically prompt. Logically exact:
// the engine never returns an entry at or after its deadline (a read checks
// the deadline and removes a due entry on the spot: lazy expiry). Physically
// prompt: the active cycle walks each shard's index in deadline order and
// removes what is due, so its cost is proportional to the entries that are
// actually due, not to the number of keys with a TTL (unlike Redis's random
// sampling, which slows down when many TTL keys are not yet due).
package expiry

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/google/btree"
)

// Item is one entry of the index: a deadline (engine-clock nanoseconds) and
// the slot of the entry in its shard. Items are ordered by deadline, then by
// slot. Item holds no pointers.
type Item struct {
	Deadline int64
	Slot     uint32
}

func less(a, b Item) bool {
	if a.Deadline != b.Deadline {
		return a.Deadline < b.Deadline
	}
	return a.Slot < b.Slot
}

func compare(a, b Item) int {
	if c := cmp.Compare(a.Deadline, b.Deadline); c != 0 {
		return c
	}
	return cmp.Compare(a.Slot, b.Slot)
}

// chunkCap is the most items a chunk holds: 63 items of 16 bytes and two
// ints make a chunk exactly 1 KiB, an allocation size class.
const chunkCap = 63

// chunk is a sorted run of items, items[head:tail]. It holds no pointers:
// the garbage collector does not scan it.
type chunk struct {
	items      [chunkCap]Item
	head, tail int
}

func (c *chunk) len() int { return c.tail - c.head }

func (c *chunk) live() []Item { return c.items[c.head:c.tail] }

// insertAt inserts it before the i-th live item of a chunk that is not
// full, moving the shorter side of the run.
func (c *chunk) insertAt(i int, it Item) {
	p := c.head + i
	if c.head > 0 && (c.tail == chunkCap || i < c.tail-p) {
		copy(c.items[c.head-1:p-1], c.items[c.head:p])
		c.head--
		c.items[p-1] = it
		return
	}
	copy(c.items[p+1:c.tail+1], c.items[p:c.tail])
	c.tail++
	c.items[p] = it
}

// removeAt removes the i-th live item, moving the shorter side of the run.
func (c *chunk) removeAt(i int) {
	p := c.head + i
	if i < c.tail-p-1 {
		copy(c.items[c.head+1:p+1], c.items[c.head:p])
		c.head++
		return
	}
	copy(c.items[p:c.tail-1], c.items[p+1:c.tail])
	c.tail--
}

// ref is a chunk as the B-tree files it: under key, which is at most the
// chunk's first item and above every item of the chunks before it (the
// first chunk's key may be an item already popped).
type ref struct {
	key Item
	c   *chunk
}

func refLess(a, b ref) bool { return less(a.key, b.key) }

// degree is the B-tree's minimum degree: nodes hold up to 2*degree-1 refs.
const degree = 16

// Index is a deadline-ordered set of Items: a B+-tree whose leaves are
// chunks, sorted runs of up to 63 items, filed in a google/btree under
// their first item. It is a plain ordered set: the engine decides what an
// item means (it files entries lazily, see the engine's shard docs).
//
// Popping the earliest item, the active expiry cycle's operation, takes it
// from the front of the first chunk (a cursor moves; nothing is copied and
// the tree is not descended), and only a chunk that empties costs a tree
// operation. So reclaiming k due items costs O(k + k/63·log n): about the
// same whether or not many items not yet due sit behind them. Add and
// Remove descend the tree (O(log(n/63))) and move at most half a chunk; an
// Add to a full chunk splits it, except one after its last item, which
// starts a new chunk (deadlines mostly arrive in increasing order, so
// chunks stay full), and a Remove that leaves a chunk under a quarter full
// merges it with a neighbour if they fit in one.
//
// Chunks hold no pointers, so the garbage collector scans only the tree's
// nodes, about one per 16–60 chunks. The zero value is not usable; call
// NewIndex. Index is not safe for concurrent use: the engine guards each
// shard's index with the shard lock.
type Index struct {
	t *btree.BTreeG[ref]
	n int // items
	// front is the first chunk, or nil if not looked up since the tree
	// last changed.
	front *chunk
	// spare is the last emptied chunk, reused by the next new one.
	spare *chunk
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{t: btree.NewG(degree, refLess)}
}

func (x *Index) newChunk(it Item) *chunk {
	c := x.spare
	if c == nil {
		c = new(chunk)
	}
	x.spare = nil
	c.items[0] = it
	c.head, c.tail = 0, 1
	return c
}

// file puts r in the tree.
func (x *Index) file(r ref) {
	x.t.ReplaceOrInsert(r)
	x.front = nil
}

// drop takes the emptied chunk of r out of the tree.
func (x *Index) drop(r ref) {
	x.t.Delete(r)
	x.front = nil
	x.spare = r.c
}

// locate returns the chunk whose range holds it: the last one filed under a
// key at or before it. ok is false if it precedes every key.
func (x *Index) locate(it Item) (r ref, ok bool) {
	x.t.DescendLessOrEqual(ref{key: it}, func(q ref) bool {
		r, ok = q, true
		return false
	})
	return r, ok
}

// Add inserts it. Adding an Item already present is a no-op.
func (x *Index) Add(it Item) {
	r, ok := x.locate(it)
	if !ok {
		// it precedes every item: it goes to the front of the first
		// chunk, refiled under it, or into a new first chunk.
		first, nonEmpty := x.t.Min()
		x.n++
		if !nonEmpty || first.c.len() == chunkCap {
			x.file(ref{it, x.newChunk(it)})
			return
		}
		x.t.Delete(first)
		first.c.insertAt(0, it)
		x.file(ref{it, first.c})
		return
	}
	c := r.c
	i, dup := slices.BinarySearchFunc(c.live(), it, compare)
	if dup {
		return
	}
	x.n++
	if c.len() < chunkCap {
		c.insertAt(i, it)
		return
	}
	if i == chunkCap {
		// After the chunk's last item (and before the next chunk's key):
		// a new chunk, so that increasing deadlines fill chunks.
		x.file(ref{it, x.newChunk(it)})
		return
	}
	// Split: the upper half moves to a new chunk.
	const half = chunkCap / 2
	nc := x.newChunk(Item{})
	nc.tail = copy(nc.items[:], c.live()[half:])
	c.tail = c.head + half
	x.file(ref{nc.items[0], nc})
	if i <= half {
		c.insertAt(i, it)
	} else {
		nc.insertAt(i-half, it)
	}
}

// Remove deletes it and reports whether it was present.
func (x *Index) Remove(it Item) bool {
	r, ok := x.locate(it)
	if !ok {
		return false
	}
	i, found := slices.BinarySearchFunc(r.c.live(), it, compare)
	if !found {
		return false
	}
	r.c.removeAt(i)
	x.n--
	switch {
	case r.c.len() == 0:
		x.drop(r)
	case r.c.len() < chunkCap/4:
		x.mergeNeighbour(r)
	}
	return true
}

// mergeNeighbour merges the chunk of r with the next or else the previous
// chunk if their items fit in one, so that removals cannot leave the index
// with many nearly empty chunks.
func (x *Index) mergeNeighbour(r ref) {
	var next, prev ref
	x.t.AscendGreaterOrEqual(r, func(q ref) bool {
		if q.c == r.c {
			return true
		}
		next = q
		return false
	})
	if next.c != nil && r.c.len()+next.c.len() <= chunkCap {
		x.merge(r, next)
		return
	}
	x.t.DescendLessOrEqual(r, func(q ref) bool {
		if q.c == r.c {
			return true
		}
		prev = q
		return false
	})
	if prev.c != nil && prev.c.len()+r.c.len() <= chunkCap {
		x.merge(prev, r)
	}
}

// merge appends the items of b's chunk to a's, which precedes it, and
// takes b out of the tree.
func (x *Index) merge(a, b ref) {
	c := a.c
	n := copy(c.items[:], c.live())
	n += copy(c.items[n:], b.c.live())
	c.head, c.tail = 0, n
	x.t.Delete(b)
	x.front = nil
	x.spare = b.c
}

// Len returns the number of items.
func (x *Index) Len() int { return x.n }

// first returns the first chunk, or nil if the index is empty.
func (x *Index) first() *chunk {
	if x.front == nil {
		if r, ok := x.t.Min(); ok {
			x.front = r.c
		}
	}
	return x.front
}

// Min returns the item with the earliest deadline.
func (x *Index) Min() (Item, bool) {
	c := x.first()
	if c == nil {
		return Item{}, false
	}
	return c.items[c.head], true
}

// PopDue removes and returns the earliest item if its deadline is at or
// before now. Amortized O(1): see Index.
func (x *Index) PopDue(now int64) (Item, bool) {
	c := x.first()
	if c == nil || c.items[c.head].Deadline > now {
		return Item{}, false
	}
	it := c.items[c.head]
	c.head++
	x.n--
	if c.head == c.tail {
		r, _ := x.t.DeleteMin()
		x.front = nil
		x.spare = r.c
	}
	return it, true
}

// CountDue returns how many items are due at now. Cost O(log n + due).
func (x *Index) CountDue(now int64) int {
	if now == 1<<63-1 {
		return x.n
	}
	n := 0
	x.AscendDue(now, func(Item) bool { n++; return true })
	return n
}

// AscendDue calls fn for each item due at now (deadline ≤ now), in
// deadline order, until fn returns false. fn must not change the index.
func (x *Index) AscendDue(now int64, fn func(Item) bool) {
	x.Ascend(func(it Item) bool {
		if it.Deadline > now {
			return false
		}
		return fn(it)
	})
}

// Ascend calls fn for each item in deadline order until fn returns false.
// fn must not change the index.
func (x *Index) Ascend(fn func(Item) bool) {
	x.t.Ascend(func(r ref) bool {
		for _, it := range r.c.live() {
			if !fn(it) {
				return false
			}
		}
		return true
	})
}

// Clear removes every item and releases the index's memory.
func (x *Index) Clear() {
	x.t.Clear(false)
	x.n = 0
	x.front, x.spare = nil, nil
}

// Check verifies the index's invariants: every chunk filed is non-empty
// and sorted, filed under a key at most its first item and after the
// previous chunk's last item, and Len counts the items. Cost O(n).
func (x *Index) Check() error {
	var err error
	n := 0
	var prev Item
	x.t.Ascend(func(r ref) bool {
		c := r.c
		switch {
		case c.head < 0 || c.head >= c.tail || c.tail > chunkCap:
			err = fmt.Errorf("expiry index: chunk filed under %v holds items [%d:%d]", r.key, c.head, c.tail)
		case less(c.items[c.head], r.key):
			err = fmt.Errorf("expiry index: chunk filed under %v starts at %v, before its key", r.key, c.items[c.head])
		case n > 0 && !less(prev, r.key):
			err = fmt.Errorf("expiry index: chunk filed under %v follows item %v", r.key, prev)
		}
		for _, it := range c.live() {
			if err == nil && n > 0 && !less(prev, it) {
				err = fmt.Errorf("expiry index: item %v follows %v", it, prev)
			}
			prev = it
			n++
		}
		return err == nil
	})
	if err == nil && n != x.n {
		err = fmt.Errorf("expiry index: Len %d, holds %d items", x.n, n)
	}
	if f := x.front; err == nil && f != nil {
		if r, _ := x.t.Min(); r.c != f {
			err = fmt.Errorf("expiry index: the cached first chunk is not the first")
		}
	}
	return err
}
