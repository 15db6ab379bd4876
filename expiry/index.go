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

import "github.com/google/btree"

// Item is one entry of the index: a deadline (engine-clock nanoseconds) and
// the slot of the entry in its shard. Items are ordered by deadline, then by
// slot. Item holds no pointers, so the B-tree's nodes are the only thing the
// garbage collector scans (about one node per 30 items).
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

// degree is the B-tree's minimum degree: nodes hold up to 2*degree-1 items.
const degree = 32

// Index is a deadline-ordered set of Items on google/btree. It is a plain
// ordered set: the engine decides what an item means (it files entries
// lazily, see the engine's shard docs). The zero value
// is not usable; call NewIndex. Index is not safe for concurrent use: the
// engine guards each shard's index with the shard lock. Add, Remove and
// PopDue cost O(log n).
type Index struct {
	t *btree.BTreeG[Item]
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{t: btree.NewG(degree, less)}
}

// Add inserts it. Adding an Item already present is a no-op.
func (x *Index) Add(it Item) { x.t.ReplaceOrInsert(it) }

// Remove deletes it and reports whether it was present.
func (x *Index) Remove(it Item) bool {
	_, ok := x.t.Delete(it)
	return ok
}

// Len returns the number of items.
func (x *Index) Len() int { return x.t.Len() }

// Min returns the item with the earliest deadline.
func (x *Index) Min() (Item, bool) { return x.t.Min() }

// PopDue removes and returns the earliest item if its deadline is at or
// before now.
func (x *Index) PopDue(now int64) (Item, bool) {
	it, ok := x.t.Min()
	if !ok || it.Deadline > now {
		return Item{}, false
	}
	x.t.DeleteMin()
	return it, true
}

// CountDue returns how many items are due at now. Cost O(log n + due).
func (x *Index) CountDue(now int64) int {
	if now == 1<<63-1 {
		return x.t.Len()
	}
	n := 0
	x.t.AscendLessThan(Item{Deadline: now + 1}, func(Item) bool { n++; return true })
	return n
}

// AscendDue calls fn for each item due at now (deadline ≤ now), in
// deadline order, until fn returns false.
func (x *Index) AscendDue(now int64, fn func(Item) bool) {
	x.t.Ascend(func(it Item) bool {
		if it.Deadline > now {
			return false
		}
		return fn(it)
	})
}

// Ascend calls fn for each item in deadline order until fn returns false.
func (x *Index) Ascend(fn func(Item) bool) { x.t.Ascend(fn) }

// Clear removes every item.
func (x *Index) Clear() { x.t.Clear(false) }
