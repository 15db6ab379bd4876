package engine

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"

	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
	"github.com/tidekv/tide/internal/table"
)

// Storage layout (per shard)
//
// Every shard keeps its entries in pointer-free structures, so that the
// garbage collector scans almost nothing however many entries there are:
//
//   - arena []byte: one record per entry, a 24-byte header (version,
//     deadline, value length, key length and flags) followed by the key and
//     the value. Writes append; an overwrite with a value no longer than the
//     old one is done in place. Bytes no live record uses are counted as
//     garbage. When an append does not fit, or garbage exceeds half the
//     arena, the arena is rebuilt compactly with 25% headroom.
//   - ents []uint32: the arena offset (+1) of each slot's record; 0 marks a
//     free slot (free slots are kept on a stack and reused). The slot is the
//     entry's handle for the eviction policy and the expiry index. The array
//     is dense (4 bytes an entry), so the hop from the hash table to the
//     record usually hits the CPU cache.
//   - tab table.Table: open addressing from a 32-bit tag of the key hash to
//     the slot (8 bytes a word, load ≤ 3/4); keys are confirmed against the
//     arena.
//
// A read is thus: hash, table word, ents word, record (header, key and
// value are contiguous). Entries with a TTL also have an item (deadline,
// slot) in the shard's expiry.Index, a B-tree of pointer-free items, filed
// lazily (see setDeadlineLocked).
//
// Byte accounting is by construction: an entry accounts len(key) +
// len(value) + EntryOverhead, and the shard's total is the sum over its
// live entries. EntryOverhead is measured (see README, "Memory").

// EntryOverhead is the number of bytes the engine accounts per entry beyond
// its key and value: the record header and slot word, the hash-table word at
// its mean load, arena headroom, and shard bookkeeping, as measured by
// TestEntryOverheadMatchesHeap.
const EntryOverhead = 64

const (
	flagPinned  = 1 << iota // never evicted
	flagTracked             // known to the eviction policy
)

// Record header layout, little endian.
const (
	hdrVersion  = 0  // uint64
	hdrDeadline = 8  // int64, engine-clock ns; 0 = no TTL
	hdrVlen     = 16 // uint32
	hdrKlen     = 20 // uint32: key length (low 24 bits) | flags << 24
	hdrSize     = 24
	maxKeyLen   = 1<<24 - 1
)

// entry is a view of one live record: the shard, the slot and the record's
// arena offset. It is only valid until the arena is next rebuilt
// (allocLocked), after which it must be taken again with at.
type entry struct {
	s    *shard
	slot uint32
	off  uint32
}

// at returns the entry at a live slot.
func (s *shard) at(slot uint32) entry { return entry{s, slot, s.ents[slot] - 1} }

func (en entry) hdr() []byte { return en.s.arena[en.off : en.off+hdrSize : en.off+hdrSize] }

func (en entry) version() uint64     { return binary.LittleEndian.Uint64(en.hdr()[hdrVersion:]) }
func (en entry) deadline() int64     { return int64(binary.LittleEndian.Uint64(en.hdr()[hdrDeadline:])) }
func (en entry) vlen() uint32        { return binary.LittleEndian.Uint32(en.hdr()[hdrVlen:]) }
func (en entry) klen() uint32        { return binary.LittleEndian.Uint32(en.hdr()[hdrKlen:]) & maxKeyLen }
func (en entry) flags() uint32       { return binary.LittleEndian.Uint32(en.hdr()[hdrKlen:]) >> 24 }
func (en entry) setVersion(v uint64) { binary.LittleEndian.PutUint64(en.hdr()[hdrVersion:], v) }
func (en entry) setVlen(n uint32)    { binary.LittleEndian.PutUint32(en.hdr()[hdrVlen:], n) }

// setDeadlineField writes the deadline; callers use shard.setDeadlineLocked.
func (en entry) setDeadlineField(d int64) {
	binary.LittleEndian.PutUint64(en.hdr()[hdrDeadline:], uint64(d))
}

func (en entry) setFlags(f uint32) {
	binary.LittleEndian.PutUint32(en.hdr()[hdrKlen:], en.klen()|f<<24)
}

func (en entry) key() []byte {
	k := en.off + hdrSize
	return en.s.arena[k : k+en.klen()]
}

func (en entry) value() []byte {
	v := en.off + hdrSize + en.klen()
	return en.s.arena[v : v+en.vlen()]
}

// recLen is the record's length in the arena.
func (en entry) recLen() int { return hdrSize + int(en.klen()) + int(en.vlen()) }

func (en entry) size() int64 { return int64(en.klen()) + int64(en.vlen()) + EntryOverhead }

// maxArena is the largest arena a shard may have: offsets are uint32, and
// on 32-bit platforms a slice is at most MaxInt32 bytes.
const maxArena = int64(min(uint64(math.MaxUint32), uint64(math.MaxInt)))

type shard struct {
	// mu guards every field of the shard except hits and misses. Reads take
	// it shared; a read hit updates eviction metadata through the policy's
	// concurrent-safe Access, never under the exclusive lock.
	mu      sync.RWMutex
	tab     table.Table
	ents    []uint32 // slot → record offset + 1; 0 = free
	free    []uint32 // free slots
	arena   []byte
	garbage int   // arena bytes not referenced by a live entry
	live    int   // live (resident) entries, due ones included
	ttlLive int   // live entries with a deadline
	bytes   int64 // accounted bytes of live entries
	evictb  int64 // accounted bytes of tracked (evictable) entries
	// b is the engine's byte budget (nil: no cap). While retaining is set,
	// removeLocked adds the bytes of the entries it removes to retained
	// instead of giving them back to the budget: the room a write makes is
	// its own (see budget and keepLocked).
	b         *budget
	retaining bool
	retained  int64
	version   uint64
	idx       *expiry.Index
	pol       evict.Policy
	// deadlines is pol as an evict.DeadlineSetter, or nil if pol does not
	// order by deadline.
	deadlines evict.DeadlineSetter
	volatile  bool
	closed    bool
	seed      maphash.Seed // the engine's; set once by New

	writes, expired, evicted, deleted, replaced uint64

	sink uint64 // keeps the reclaim loop's warming loads alive

	_      [64]byte
	hits   atomic.Uint64
	misses atomic.Uint64
	_      [48]byte
}

// hash returns the engine's hash of a stored key: equal to what
// Engine.shardFor computes for the same key as a string.
func (s *shard) hash(key []byte) uint64 { return maphash.Bytes(s.seed, key) }

// findLocked returns the slot holding key. s.mu must be held (shared or
// exclusive).
func (s *shard) findLocked(key string, hash uint64) (uint32, bool) {
	tag := table.Tag(hash)
	i := s.tab.Start(tag)
	for {
		slot, ok := s.tab.Next(tag, &i)
		if !ok {
			return 0, false
		}
		off := s.ents[slot] - 1
		h := s.arena[off : off+hdrSize : off+hdrSize]
		if kl := binary.LittleEndian.Uint32(h[hdrKlen:]) & maxKeyLen; int(kl) == len(key) &&
			string(s.arena[off+hdrSize:off+hdrSize+kl]) == key {
			return slot, true
		}
	}
}

// newSlotLocked takes a free slot or grows ents. The caller sets
// ents[slot].
func (s *shard) newSlotLocked() uint32 {
	if n := len(s.free); n > 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		return slot
	}
	s.ents = append(s.ents, 0)
	return uint32(len(s.ents) - 1)
}

// allocLocked reserves n contiguous arena bytes and returns their offset.
// It may rebuild the arena, which moves every live entry's bytes (offsets
// in ents are updated; slices of the old arena must not be used after).
func (s *shard) allocLocked(n int) uint32 {
	if len(s.arena)+n > cap(s.arena) {
		s.compactLocked(n)
	}
	off := len(s.arena)
	s.arena = s.arena[:off+n]
	return uint32(off)
}

// compactLocked rebuilds the arena with only live bytes, room for extra
// more, and 25% headroom.
func (s *shard) compactLocked(extra int) {
	liveBytes := len(s.arena) - s.garbage
	want := liveBytes + extra
	want += want / 4
	want = max(want, 256)
	if int64(want) > maxArena {
		want = int(maxArena)
	}
	na := make([]byte, 0, want)
	for i, o := range s.ents {
		if o == 0 {
			continue
		}
		en := entry{s, uint32(i), o - 1}
		off := len(na)
		na = append(na, s.arena[en.off:int(en.off)+en.recLen()]...)
		s.ents[i] = uint32(off) + 1
	}
	s.arena = na
	s.garbage = 0
}

// maybeShrinkLocked releases memory after removals: all of it when the shard
// is empty, or the garbage when it exceeds half of a large arena.
func (s *shard) maybeShrinkLocked() {
	if s.live == 0 {
		s.idx.Clear() // every item left is garbage
		if cap(s.arena) > 64<<10 || len(s.ents) > 1024 {
			s.arena = nil
			s.ents = nil
			s.free = nil
			s.garbage = 0
			s.tab.Reset()
		} else {
			s.arena = s.arena[:0]
			s.garbage = 0
		}
		return
	}
	if cap(s.arena) > 64<<10 && s.garbage > len(s.arena)/2 {
		s.compactLocked(0)
	}
}

// trackableLocked reports whether en may be evicted by the shard's policy.
func (s *shard) trackableLocked(en entry) bool {
	return s.pol != nil && en.flags()&flagPinned == 0 && (!s.volatile || en.deadline() != 0)
}

// syncPolicyLocked tells the policy about a change of the entry at slot.
// oldSize is the entry's accounted size before the change (0 for a new
// entry); written reports a write (counts as an access).
func (s *shard) syncPolicyLocked(en entry, hash uint64, oldSize int64, written bool) {
	if s.pol == nil {
		return
	}
	was := en.flags()&flagTracked != 0
	now := s.trackableLocked(en)
	if now && hash == 0 {
		hash = s.hash(en.key())
	}
	h := evict.Handle(en.slot)
	switch {
	case was && !now:
		s.pol.Remove(h)
		s.addEvictableLocked(-oldSize)
		en.setFlags(en.flags() &^ flagTracked)
	case !was && now:
		s.pol.Add(h, evict.Entry{Hash: hash, Size: en.size(), Deadline: en.deadline()})
		s.addEvictableLocked(en.size())
		en.setFlags(en.flags() | flagTracked)
	case was && now && (written || oldSize != en.size()):
		s.pol.Update(h, evict.Entry{Hash: hash, Size: en.size(), Deadline: en.deadline()})
		s.addEvictableLocked(en.size() - oldSize)
	}
}

// setDeadlineLocked sets the entry at slot to expire at d (0 = never). A
// policy that orders by deadline (evict.DeadlineSetter) is told at once if
// it tracks the entry, so every caller (TTL-only changes included) keeps it
// current; a change of trackability is the caller's syncPolicyLocked.
//
// The expiry index is updated lazily. Its invariant is: every live entry
// with a deadline has an index item (x, slot) with x ≤ its deadline. So a
// deadline that moves later (a sliding TTL, an overwrite with a fresh TTL)
// costs no index operation: when the cycle pops the earlier item it finds
// the entry not yet due and re-files it at its current deadline. Only a new
// or earlier deadline adds an item. Items left behind by removed entries or
// cleared deadlines are garbage; the cycle drops them, and the index is
// rebuilt when garbage outnumbers live TTL entries.
func (s *shard) setDeadlineLocked(en entry, d int64) {
	old := en.deadline()
	if old == d {
		return
	}
	switch {
	case old == 0:
		s.ttlLive++
	case d == 0:
		s.ttlLive--
	}
	en.setDeadlineField(d)
	if s.deadlines != nil && en.flags()&flagTracked != 0 {
		s.deadlines.SetDeadline(evict.Handle(en.slot), d)
	}
	if d != 0 && (old == 0 || d < old) {
		s.idx.Add(expiry.Item{Deadline: d, Slot: en.slot})
	}
	s.boundIndexLocked()
}

// rebuildIndexLocked drops the index's garbage, leaving one item per live
// entry with a deadline, at that deadline. Every such entry has an item
// already, so walking the index finds them all: the cost is proportional to
// the index, not to the shard.
func (s *shard) rebuildIndexLocked() {
	keep := make([]expiry.Item, 0, s.ttlLive)
	s.idx.Ascend(func(it expiry.Item) bool {
		if s.ents[it.Slot] != 0 {
			if d := s.at(it.Slot).deadline(); d != 0 {
				keep = append(keep, expiry.Item{Deadline: d, Slot: it.Slot})
			}
		}
		return true
	})
	s.idx.Clear()
	for _, it := range keep {
		s.idx.Add(it) // duplicates collapse
	}
}

// boundIndexLocked rebuilds the index when garbage outnumbers the live
// entries with a deadline (plus a constant), so the index never holds more
// than about twice what it must. Amortized O(log n) per garbage item.
func (s *shard) boundIndexLocked() {
	if s.idx.Len() > 2*s.ttlLive+256 {
		s.rebuildIndexLocked()
	}
}

// removeLocked removes the entry at slot and records the removal. hash may
// be 0 if unknown (it is then recomputed from the key). The entry's bytes go
// back to the budget, or to s.retained while s.retaining is set.
func (s *shard) removeLocked(slot uint32, hash uint64, cause Cause, ev *[]Removal) {
	en := s.at(slot)
	if hash == 0 {
		hash = s.hash(en.key())
	}
	if ev != nil {
		*ev = append(*ev, Removal{Key: string(en.key()), Value: append([]byte(nil), en.value()...), Version: en.version(), Cause: cause})
	}
	s.tab.Delete(table.Tag(hash), slot)
	hadTTL := en.deadline() != 0
	if en.flags()&flagTracked != 0 {
		s.pol.Remove(evict.Handle(slot))
		s.addEvictableLocked(-en.size())
	}
	s.addBytesLocked(-en.size())
	switch {
	case s.retaining:
		s.retained += en.size()
	case s.b != nil:
		s.b.used.Add(-en.size())
	}
	s.garbage += en.recLen()
	s.live--
	switch cause {
	case Expired:
		s.expired++
	case Evicted:
		s.evicted++
	case Deleted:
		s.deleted++
	}
	s.ents[slot] = 0
	s.free = append(s.free, slot)
	if hadTTL {
		s.ttlLive-- // its index item is now garbage
		s.boundIndexLocked()
	}
}

// reclaimBatch is how many due index items reclaimDueLocked pops before
// touching their records.
const reclaimBatch = 64

// reclaimDueLocked removes up to max due entries, earliest first. It pops
// at most 4×max index items (garbage items and items of entries whose
// deadline moved later cost a pop each) and reports whether due items
// remain.
//
// Due entries are usually cold (nobody has read them for a TTL), so each
// costs a few cache misses: its slot word, its record, its table word. The
// items are therefore popped in batches, and each batch's slot words, then
// records and table words, are loaded in loops of independent loads before
// any entry is removed, so that the CPU overlaps the misses instead of
// taking them one after another.
func (s *shard) reclaimDueLocked(now int64, max int, ev *[]Removal) (n int, more bool) {
	var batch [reclaimBatch]expiry.Item
	var hashes [reclaimBatch]uint64
	for pops := 0; n < max && pops < 4*max; {
		k := 0
		for k < len(batch) && n+k < max && pops < 4*max {
			it, ok := s.idx.PopDue(now)
			if !ok {
				break
			}
			pops++
			batch[k] = it
			k++
		}
		if k == 0 {
			break
		}
		var sink uint64
		for _, it := range batch[:k] {
			sink += uint64(s.ents[it.Slot])
		}
		for i, it := range batch[:k] {
			hashes[i] = 0
			if o := s.ents[it.Slot]; o != 0 {
				if en := (entry{s, it.Slot, o - 1}); en.deadline() == it.Deadline {
					hashes[i] = s.hash(en.key())
					sink += s.tab.Touch(table.Tag(hashes[i]))
				}
			}
		}
		s.sink = sink
		for i, it := range batch[:k] {
			if s.ents[it.Slot] == 0 {
				continue // garbage: the entry is gone
			}
			switch d := s.at(it.Slot).deadline(); {
			case d == 0:
				// Garbage: the entry lost its TTL.
			case d == it.Deadline:
				s.removeLocked(it.Slot, hashes[i], Expired, ev)
				n++
			case d > it.Deadline:
				// The deadline moved later: file it there (a no-op if an
				// item at that deadline exists already), so that entries
				// leave in the order of their own deadlines.
				s.idx.Add(expiry.Item{Deadline: d, Slot: it.Slot})
			}
		}
	}
	it, ok := s.idx.Min()
	return n, ok && it.Deadline <= now
}

// dueLocked counts the live entries that are due at now. Every such entry
// has an index item at or before its deadline, hence at or before now, so
// walking the due items finds them all (an entry may have several). Cost
// O(due index items).
func (s *shard) dueLocked(now int64) int {
	var seen map[uint32]struct{}
	s.idx.AscendDue(now, func(it expiry.Item) bool {
		if s.ents[it.Slot] == 0 {
			return true
		}
		if d := s.at(it.Slot).deadline(); d != 0 && d <= now {
			if seen == nil {
				seen = map[uint32]struct{}{}
			}
			seen[it.Slot] = struct{}{}
		}
		return true
	})
	return len(seen)
}

// ReclaimDue implements expiry.Reclaimer for the active cycle.
func (s *shard) reclaimDue(now int64, max int, ev *[]Removal) (int, bool) {
	s.mu.Lock()
	n, more := s.reclaimDueLocked(now, max, ev)
	if n > 0 {
		s.maybeShrinkLocked()
	}
	s.mu.Unlock()
	return n, more
}
