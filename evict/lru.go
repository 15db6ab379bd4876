package evict

import (
	"sync/atomic"
	"unsafe"
)

// AllKeysLRU evicts the least recently used entry.
//
// Its reads never take a lock and, for hot entries, write nothing.
//
// Recency is a 32-bit stamp from a logical clock that advances on every
// write (Add, Update) and every Victim call. A read hit (Access) loads the
// clock and stores it into the entry's stamp only if it differs, so an entry
// read many times between two writes costs one atomic load and no store:
// hot reads never contend on a shared cache line. When a read revives an
// entry whose stamp is more than max(64, n/4) ticks old (n = tracked
// entries), it also advances the clock (one compare-and-swap, lossy), so
// entries coming back from near the eviction end between the same two
// writes get distinct stamps and keep their order; reads of entries near
// the young end do not.
//
// Victim keeps the entries in a binary min-heap keyed by the stamp each
// entry had when it was last placed in the heap. Reads do not touch the
// heap; instead, when the heap's top turns out to have been read since it
// was placed (its stamp moved), Victim re-keys it with the new stamp, sifts
// it down and looks again. The top that survives this check has the oldest
// stamp, so the order is exact LRU up to ties between young entries read
// between the same two clock ticks. On the reference traces tide's LRU is
// within 0.05 point of an exact LRU (bench/HITRATIO.md). Stamps compare with
// wrap-around arithmetic, exact while entries are less than 2³¹ ticks apart;
// so that they always are, every 2²⁸ ticks the stamps more than 2³⁰ ticks
// old are raised to 2³⁰ ticks old (an O(n) pass under the shard's lock):
// entries unused for that long stay the least recently used, in no
// particular order among themselves.
//
// Cost: Access O(1): an atomic load, a store when the clock moved since the
// entry's last read, and a CAS on the shared clock only for entries revived
// from the older three quarters of the order (on uniform access over a large
// set, that is most reads; on skewed access, few). Add, Update and Remove
// O(log n), and once every 2²⁸ ticks a write or Victim O(n) (the rebase);
// Victim O(log n) plus O(log n) for each entry read since it was
// last placed (each read is paid for at most once). Memory: 16 bytes per
// entry (stamp, heap key, heap slot, heap position).
//
// Choose it when recency predicts reuse (sessions, recently written data)
// and you want Redis's allkeys-lru behaviour with exact ordering. It has no
// scan resistance: a scan larger than the cache flushes it; prefer TinyLFU
// for general caching.
var AllKeysLRU = Spec{Name: "allkeys-lru", New: newLRUPolicy}

// VolatileLRU is AllKeysLRU restricted to entries with a TTL.
var VolatileLRU = Spec{Name: "volatile-lru", Volatile: true, New: newLRUPolicy}

func newLRUPolicy(int64) Policy { return newLRU() }

// lruPolicy is the policy of AllKeysLRU and VolatileLRU, whose doc describes
// it.
type lruPolicy struct {
	lruState
	// Every shard has its policy, written under its own lock: whole lines
	// keep two shards' policies off one line (at 104 bytes, in Go's
	// 112-byte size class, one shard's clock shared a line with the next
	// one's slice headers).
	_ [(64 - unsafe.Sizeof(lruState{})%64) % 64]byte
}

type lruState struct {
	clock atomic.Uint32
	old   atomic.Uint32   // an Access to an entry this many ticks old advances the clock
	stamp []atomic.Uint32 // last access, written by Access
	key   []uint32        // stamp when last placed in the heap
	pos   []uint32        // index in heap, or none
	heap  []Handle
}

// newLRU returns an empty LRU policy.
func newLRU() *lruPolicy { return &lruPolicy{} }

// tick returns the current clock and advances it, so that reads after a
// write are stamped newer than the write.
func (p *lruPolicy) tick() uint32 {
	c := p.clock.Load()
	if c%lruRebase == 0 {
		p.rebase(c)
	}
	p.clock.Store(c + 1)
	return c
}

// rebase raises the stamps and heap keys of the tracked entries more than
// lruMaxAge ticks older than c to exactly that old. Only the entries at
// the old end of the order change, to keys at most every other key, so
// the heap stays ordered; a stamp is never older than its key after.
func (p *lruPolicy) rebase(c uint32) {
	floor := c - lruMaxAge
	for _, h := range p.heap {
		if c-p.key[h] > lruMaxAge {
			p.key[h] = floor
		}
		if c-p.stamp[h].Load() > lruMaxAge {
			p.stamp[h].Store(floor)
		}
	}
}

func (p *lruPolicy) grow(h Handle) {
	if int(h) < len(p.pos) {
		return
	}
	n := growLen(h, len(p.pos))
	s := make([]atomic.Uint32, n)
	for i := range p.stamp {
		s[i].Store(p.stamp[i].Load())
	}
	p.stamp = s
	k := make([]uint32, n)
	copy(k, p.key)
	p.key = k
	ps := make([]uint32, n)
	copy(ps, p.pos)
	for i := len(p.pos); i < n; i++ {
		ps[i] = none
	}
	p.pos = ps
}

func (p *lruPolicy) tracked(h Handle) bool { return int(h) < len(p.pos) && p.pos[h] != none }

const (
	lruOldMin = 64
	lruOldDiv = 4
)

// Every lruRebase ticks, tick raises the stamps and heap keys more than
// lruMaxAge ticks old to lruMaxAge ticks old (see rebase): no entry is
// then ever more than lruMaxAge+lruRebase < 2³¹ ticks old, so older
// compares every pair of tracked entries exactly.
const (
	lruRebase = 1 << 28
	lruMaxAge = 1 << 30
)

// older reports whether a is an older stamp than b, modulo 2³².
func older(a, b uint32) bool { return int32(a-b) < 0 }

func (p *lruPolicy) less(i, j int) bool { return older(p.key[p.heap[i]], p.key[p.heap[j]]) }

func (p *lruPolicy) swap(i, j int) {
	p.heap[i], p.heap[j] = p.heap[j], p.heap[i]
	p.pos[p.heap[i]] = uint32(i)
	p.pos[p.heap[j]] = uint32(j)
}

func (p *lruPolicy) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !p.less(i, parent) {
			return
		}
		p.swap(i, parent)
		i = parent
	}
}

func (p *lruPolicy) down(i int) {
	n := len(p.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && p.less(r, l) {
			m = r
		}
		if !p.less(m, i) {
			return
		}
		p.swap(i, m)
		i = m
	}
}

// Add implements Policy.
func (p *lruPolicy) Add(h Handle, e Entry) {
	if p.tracked(h) {
		p.Update(h, e)
		return
	}
	p.grow(h)
	c := p.tick()
	p.stamp[h].Store(c)
	p.key[h] = c
	p.pos[h] = uint32(len(p.heap))
	p.heap = append(p.heap, h)
	p.up(len(p.heap) - 1)
	p.old.Store(uint32(max(lruOldMin, len(p.heap)/lruOldDiv)))
}

// Update implements Policy; a write counts as an access.
func (p *lruPolicy) Update(h Handle, e Entry) {
	if !p.tracked(h) {
		p.Add(h, e)
		return
	}
	p.stamp[h].Store(p.tick()) // re-keyed lazily by Victim
}

// Remove implements Policy.
func (p *lruPolicy) Remove(h Handle) {
	if !p.tracked(h) {
		return
	}
	i := int(p.pos[h])
	last := len(p.heap) - 1
	if i != last {
		p.swap(i, last)
	}
	p.heap = p.heap[:last]
	p.pos[h] = none
	if i < last {
		p.down(i)
		p.up(i)
	}
}

// Access implements Policy. It is safe for concurrent use and never blocks.
func (p *lruPolicy) Access(h Handle) {
	if int(h) >= len(p.stamp) {
		return
	}
	c := p.clock.Load()
	if s := p.stamp[h].Load(); s != c {
		p.stamp[h].Store(c)
		if c-s > p.old.Load() && c%lruRebase != 0 {
			// The entry comes back from far behind: give it a stamp of its
			// own, so that entries revived between the same two writes
			// keep their order. Lossy: a concurrent tick may win. A clock
			// at a multiple of lruRebase is left for tick to rebase.
			p.clock.CompareAndSwap(c, c+1)
		}
	}
}

// Miss implements Policy; LRU ignores misses.
func (p *lruPolicy) Miss(uint64) {}

// Victim implements Policy.
func (p *lruPolicy) Victim(now int64) (Handle, bool) {
	p.tick()
	for len(p.heap) > 0 {
		h := p.heap[0]
		s := p.stamp[h].Load()
		if s == p.key[h] {
			return h, true
		}
		p.key[h] = s
		p.down(0)
	}
	return 0, false
}

// Len reports how many entries the policy tracks.
func (p *lruPolicy) Len() int { return len(p.heap) }

func (p *lruPolicy) check() error {
	n := 0
	for h, i := range p.pos {
		if i == none {
			continue
		}
		n++
		if int(i) >= len(p.heap) || p.heap[i] != Handle(h) {
			return errorf("lru: pos[%d]=%d does not point back", h, i)
		}
	}
	if n != len(p.heap) {
		return errorf("lru: %d positions for %d heap slots", n, len(p.heap))
	}
	for i := 1; i < len(p.heap); i++ {
		if p.less(i, (i-1)/2) {
			return errorf("lru: heap order broken at %d", i)
		}
	}
	for _, h := range p.heap {
		if older(p.stamp[h].Load(), p.key[h]) {
			return errorf("lru: handle %d stamp older than its heap key", h)
		}
	}
	return nil
}
