package engine

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
	"github.com/tidekv/tide/internal/table"
)

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
	log       shardLog     // the durability log's state (see durable.go)

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
		}
		// A small arena keeps its bytes as garbage: its records are
		// never overwritten (a View may still read one), so new records
		// go after them until the next rebuild.
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
	if cause == CauseEvicted {
		s.noteEvictedLocked(en) // logged with the shard's next record
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
	case CauseExpired:
		s.expired++
	case CauseEvicted:
		s.evicted++
	case CauseDeleted:
		s.deleted++
	}
	s.ents[slot] = 0
	s.free = append(s.free, slot)
	if hadTTL {
		s.ttlLive-- // its index item is now garbage
		s.boundIndexLocked()
	}
}

// countRead counts a read's hit or miss.
func (s *shard) countRead(hit bool) {
	if hit {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
}
