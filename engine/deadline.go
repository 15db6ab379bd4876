package engine

import (
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
	"github.com/tidekv/tide/internal/table"
)

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
//
// A record without a deadline word (flagDeadline) that gets a deadline
// moves to a new record with one (relocateLocked): the returned entry is
// where the entry now is, and en must not be used after. The caller has
// checked that the arena can take the move (deadlineRoomLocked).
func (s *shard) setDeadlineLocked(en entry, d int64) entry {
	old := en.deadline()
	if old == d {
		return en
	}
	switch {
	case old == 0:
		s.ttlLive++
	case d == 0:
		s.ttlLive--
	}
	if en.flags()&flagDeadline == 0 {
		en = s.relocateLocked(en, flagDeadline)
	}
	en.setDeadlineField(d)
	if s.deadlines != nil && en.flags()&flagTracked != 0 {
		s.flushPendingLocked() // the policy sees changes in order
		s.deadlines.SetDeadline(evict.Handle(en.slot), d)
	}
	if d != 0 && (old == 0 || d < old) {
		s.idx.Add(expiry.Item{Deadline: d, Slot: en.slot})
	}
	s.boundIndexLocked()
	return en
}

// deadlineRoomLocked is arenaRoomLocked for giving en the deadline d: a
// record without a deadline word moves to a new record (relocateLocked),
// and the old one stays live until the copy is complete, so the arena must
// hold the live records and the new one, as for a write.
func (s *shard) deadlineRoomLocked(en entry, d int64) error {
	if d == 0 || en.flags()&flagDeadline != 0 {
		return nil
	}
	return s.arenaRoomLocked(int64(recSize(int(en.klen()), int(en.vlen()), flagDeadline)))
}

// relocateLocked moves en's record to a new one with flags added (the
// same bytes otherwise; a deadline word added is 0), and returns the entry
// there. The old record's bytes are garbage and are never written again
// (a View may be reading its value). The allocation may rebuild the
// arena (with the shard open to optimistic readers), so the caller must
// not have a change of the arrays in progress.
func (s *shard) relocateLocked(en entry, add uint32) entry {
	slot := en.slot
	kl, vl := int(en.klen()), int(en.vlen())
	off := s.allocLocked(recSize(kl, vl, en.flags()|add))
	en = s.at(slot) // the allocation may have moved it
	flags := en.flags()&^flagViewed | add
	kw := putHeader(s.arena, off, en.version(), en.deadline(), uint32(vl), uint32(kl), flags, slot)
	copy(s.arena[keyAt(off, kw):], en.key())
	copy(s.arena[valueAt(off, kw):], en.value())
	s.garbage += en.recLen()
	s.ents.set(slot, off+1)
	s.tab.Replace(table.Tag(s.hash(en.key())), recRef(en.off), recRef(off))
	return s.at(slot)
}

// boundIndexLocked rebuilds the index when garbage outnumbers the live
// entries with a deadline (plus a constant), so the index never holds more
// than about twice what it must. Amortized O(log n) per garbage item.
func (s *shard) boundIndexLocked() {
	if s.idx.Len() > 2*s.ttlLive+256 {
		s.rebuildIndexLocked()
	}
}

// rebuildIndexLocked drops the index's garbage, leaving one item per live
// entry with a deadline, at that deadline. Every such entry has an item
// already, so walking the index finds them all: the cost is proportional to
// the index, not to the shard.
func (s *shard) rebuildIndexLocked() {
	keep := make([]expiry.Item, 0, s.ttlLive)
	s.idx.Ascend(func(it expiry.Item) bool {
		if s.ents.get(it.Slot) != 0 {
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
// table word is the one whose cost grows with the shard: due entries were
// written over time, so their records and slots lie close together, but
// their table words are spread over a table sized for every resident
// entry, one miss each. The items are therefore popped in batches, and
// each batch's slot words, records and table words are loaded stage by
// stage, each stage a tight loop of independent loads (the table words
// once the records have given the hashes), before any entry is removed:
// the CPU overlaps a stage's misses instead of taking them one after
// another.
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
			sink += uint64(s.ents.get(it.Slot))
		}
		// The header and the key's last byte (its line may follow the
		// header's); an empty key is not read: a bare header may end the
		// arena.
		for _, it := range batch[:k] {
			if o := s.ents.get(it.Slot); o != 0 {
				en := entry{s, it.Slot, o - 1}
				sink += uint64(en.deadline())
				if kl := en.klen(); kl > 0 {
					sink += uint64(s.arena[keyAt(en.off, en.kw())+kl-1])
				}
			}
		}
		for i, it := range batch[:k] {
			hashes[i] = 0
			if o := s.ents.get(it.Slot); o != 0 {
				if en := (entry{s, it.Slot, o - 1}); en.deadline() == it.Deadline {
					hashes[i] = s.hash(en.key())
				}
			}
		}
		// A table word and the next line's: a deletion shifts back the
		// rest of the word's cluster, which may run into it.
		if w := s.tab.Words(); len(w) > 0 {
			for _, h := range hashes[:k] {
				i := table.Home(w, table.Tag(h))
				sink += w[i] + w[table.Ahead(w, i, 8)]
			}
		}
		s.sink = sink
		for i, it := range batch[:k] {
			if s.ents.get(it.Slot) == 0 {
				continue // garbage: the entry is gone
			}
			switch d := s.at(it.Slot).deadline(); {
			case d == 0:
				// Garbage: the entry lost its TTL.
			case d == it.Deadline:
				s.removeLocked(it.Slot, hashes[i], CauseExpired, ev)
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
		if s.ents.get(it.Slot) == 0 {
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

// reclaimDue is one shard's part of an active expiry cycle: it removes up
// to max due entries under the shard's lock. reclaimer.ReclaimDue, which
// implements expiry.Reclaimer, calls it.
func (s *shard) reclaimDue(now int64, max int, ev *[]Removal) (int, bool) {
	s.mu.Lock()
	n, more := s.reclaimDueLocked(now, max, ev)
	if n > 0 {
		s.maybeShrinkLocked()
	}
	s.mu.Unlock()
	return n, more
}
