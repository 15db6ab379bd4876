package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
	"github.com/tidekv/tide/internal/table"
)

// Check verifies the engine's internal invariants and returns an error
// describing the first violation. It locks each shard in turn and costs
// O(entries); tests call it after every operation. The invariants:
//
//   - every live slot is in the hash table exactly once under its key's
//     tag, and the table holds nothing else: each table word names the
//     offset of a record that names a live slot whose ents word names the
//     same offset;
//   - the arrays published to lock-free readers are the shard's;
//   - a record has only known flags, and the header length they imply
//     (flagDeadline: the deadline word; flagWide: the lengths' word) lies
//     in the arena and is what the arena accounts; flagWide follows the
//     lengths (widthFlag), and a wide header's meta word has no lengths,
//     its wide word nothing above the key length;
//   - every live slot's record lies inside the arena, 8-byte aligned (its
//     header and value are read and written with atomic words), without
//     overlapping another, and arena length = live record bytes + garbage;
//   - every entry with a deadline has an expiry item at or before it (the
//     index is filed lazily; items of removed entries are garbage, bounded
//     by twice the entries with a deadline plus 256);
//   - the accounted bytes equal the sum of live entries' sizes;
//   - under MaxBytes, the budget's resident bytes equal the sum over the
//     shards, its evictable bytes the sum of the shards' evictable bytes,
//     its used bytes the resident ones plus the room held by writes
//     between rounds (exactly the resident ones when there are none), and
//     none exceeds MaxBytes;
//   - an entry is tracked by the policy iff it is evictable (not pinned,
//     and with a TTL under a volatile policy), and the evictable bytes
//     equal the sum of tracked sizes;
//   - the policy tracks exactly as many entries as the shard marks tracked
//     (for a policy that reports Len), and a built-in policy's own
//     invariants hold (evict.Check);
//   - the free stack holds exactly the non-live slots, once each;
//   - no version exceeds the shard's version counter.
//
// Check holds every shard's lock (shared, in ascending order, as Commit
// takes them) while it runs, so that the engine-wide sums are a snapshot.
func (e *Engine) Check() error {
	var errs []error
	var bytes, evictb int64
	for i := range e.shards {
		e.shards[i].mu.RLock()
	}
	for i := range e.shards {
		s := &e.shards[i]
		if err := s.checkLocked(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", i, err))
		}
		// The policy is used only under the exclusive lock (drains
		// included), which every shard's shared lock held here excludes.
		if s.pol != nil {
			if err := evict.Check(s.pol); err != nil {
				errs = append(errs, fmt.Errorf("shard %d: policy %w", i, err))
			}
		}
		bytes += s.bytes
		evictb += s.evictb
	}
	if b := e.b; b != nil && !e.closed.Load() {
		used, resident, evictable, carriers := b.used.Load(), b.resident.Load(), b.evictable.Load(), b.carriers.Load()
		switch {
		case resident != bytes:
			errs = append(errs, fmt.Errorf("budget: resident bytes %d, shards hold %d", resident, bytes))
		case evictable != evictb:
			errs = append(errs, fmt.Errorf("budget: evictable bytes %d, shards track %d", evictable, evictb))
		case used < resident || (carriers == 0 && used != resident):
			errs = append(errs, fmt.Errorf("budget: %d bytes used, %d resident, %d writes holding room between rounds", used, resident, carriers))
		case used > b.max:
			errs = append(errs, fmt.Errorf("budget: %d bytes used, over MaxBytes %d", used, b.max))
		}
	}
	for i := len(e.shards) - 1; i >= 0; i-- {
		e.shards[i].mu.RUnlock()
	}
	return errors.Join(errs...)
}

func (s *shard) checkLocked() error {
	// What lock-free readers read (see storeView) is the shard's arrays:
	// a reader validates against the sequence count only, so a stale
	// view would read a state no writer is changing, as current.
	if p := s.pub.Load(); p != nil {
		w := s.tab.Words()
		if len(p.words) != len(w) || unsafe.SliceData(p.words) != unsafe.SliceData(w) ||
			cap(p.arena) != cap(s.arena) || unsafe.SliceData(p.arena) != unsafe.SliceData(s.arena) {
			return errors.New("the arrays published to lock-free readers are not the shard's")
		}
	} else if s.tab.Len() > 0 {
		return fmt.Errorf("%d keys, nothing published to lock-free readers", s.tab.Len())
	}
	if !s.ents.checkHint() {
		return fmt.Errorf("the slot array remembers word %d for slot %d, which holds another", s.ents.lastWord, int(s.ents.last)-1)
	}
	var live, trackedN int
	var bytes, evictb int64
	var keyBytes int
	inTable := map[uint32]int{}
	tabErr := s.tab.Check()
	s.tab.Each(func(tag uint32, ref uint32) {
		off := refOff(ref)
		if int64(off)+hdrSize > int64(len(s.arena)) {
			tabErr = fmt.Errorf("table names offset %d, whose record header lies outside the arena (%d bytes)", off, len(s.arena))
			return
		}
		m := atomic.LoadUint64(hdr64(s.arena, off+hdrMeta))
		slot := uint32(m)
		inTable[slot]++
		if int(slot) >= s.ents.len() || s.ents.get(slot) == 0 {
			tabErr = fmt.Errorf("table names offset %d, whose record names slot %d, which is not live", off, slot)
			return
		}
		if s.ents.get(slot)-1 != off {
			tabErr = fmt.Errorf("table names offset %d for slot %d, whose record is at %d", off, slot, s.ents.get(slot)-1)
			return
		}
		if uintptr(unsafe.Pointer(unsafe.SliceData(s.arena)))&7 != 0 {
			tabErr = fmt.Errorf("slot %d's record is not 8-byte aligned", slot)
			return
		}
		// The header's length follows its flags (flagWide, flagDeadline):
		// the words they imply are read below.
		if int64(off)+int64(hdrLen(uint32(m>>56))) > int64(len(s.arena)) {
			tabErr = fmt.Errorf("slot %d's record header (flags %b) lies outside the arena", slot, uint32(m>>56))
			return
		}
		en := s.at(slot)
		if int(en.off)+en.recLen() > len(s.arena) {
			tabErr = fmt.Errorf("slot %d's record lies outside the arena", slot)
			return
		}
		if table.Tag(s.hash(en.key())) != tag {
			tabErr = fmt.Errorf("slot %d is under tag %x, not its key's", slot, tag)
		}
	})
	if tabErr != nil {
		return tabErr
	}
	if err := s.idx.Check(); err != nil {
		return err
	}
	// The earliest index item per slot; the invariant is that every live
	// entry with a deadline has one at or before its deadline.
	idxItems := make(map[uint32]int64, s.idx.Len())
	s.idx.Ascend(func(it expiry.Item) bool {
		if _, ok := idxItems[it.Slot]; !ok {
			idxItems[it.Slot] = it.Deadline
		}
		return true
	})
	ttlLive := 0
	type span struct{ a, b uint32 }
	var spans []span
	for i := range s.ents.len() {
		if s.ents.get(uint32(i)) == 0 {
			continue
		}
		slot := uint32(i)
		if inTable[slot] != 1 {
			return fmt.Errorf("live slot %d is in the table %d times", slot, inTable[slot])
		}
		en := s.at(slot)
		live++
		bytes += en.size()
		keyBytes += en.recLen()
		spans = append(spans, span{en.off, en.off + uint32(en.recLen())})
		if f := en.flags(); f&^(flagPinned|flagTracked|flagViewed|flagDeadline|flagWide) != 0 {
			return fmt.Errorf("slot %d has unknown flags %b", slot, f)
		} else if kl, vl := en.klen(), en.vlen(); f&flagWide != widthFlag(kl, vl) {
			return fmt.Errorf("slot %d: flags %b, a %d-byte key and a %d-byte value: the header's width does not follow the lengths", slot, f, kl, vl)
		} else if f&flagWide != 0 {
			// A wide header's lengths are in its own word: the meta
			// word's length fields are 0, and the wide word has nothing
			// above the key length.
			if m := en.meta(); m>>32&(1<<24-1) != 0 {
				return fmt.Errorf("slot %d: a wide header whose meta word holds lengths (%#x)", slot, m)
			}
			if w := atomic.LoadUint64(hdr64(s.arena, en.off+hdrWide)); w>>56 != 0 {
				return fmt.Errorf("slot %d: a wide header whose wide word has bits above the key length (%#x)", slot, w)
			}
		}
		if en.version() == 0 || en.version() > s.version {
			return fmt.Errorf("slot %d has version %d, counter %d", slot, en.version(), s.version)
		}
		tracked := en.flags()&flagTracked != 0
		if tracked != s.trackableLocked(en) {
			return fmt.Errorf("slot %d tracked=%v, evictable=%v", slot, tracked, s.trackableLocked(en))
		}
		if tracked {
			evictb += en.size()
			trackedN++
		}
		if d := en.deadline(); d != 0 {
			ttlLive++
			if x, ok := idxItems[slot]; !ok || x > d {
				return fmt.Errorf("slot %d has deadline %d but its earliest index item is %d (present=%v)", slot, d, x, ok)
			}
		}
	}
	if live != s.live || live != s.tab.Len() {
		return fmt.Errorf("live count %d, recorded %d, table %d", live, s.live, s.tab.Len())
	}
	if bytes != s.bytes {
		return fmt.Errorf("accounted bytes %d, recorded %d", bytes, s.bytes)
	}
	if evictb != s.evictb {
		return fmt.Errorf("evictable bytes %d, recorded %d", evictb, s.evictb)
	}
	if p, ok := s.pol.(interface{ Len() int }); ok && p.Len() != trackedN {
		return fmt.Errorf("the policy tracks %d entries, the shard %d", p.Len(), trackedN)
	}
	if keyBytes+s.garbage != len(s.arena) {
		return fmt.Errorf("arena %d bytes, live %d + garbage %d", len(s.arena), keyBytes, s.garbage)
	}
	// Spans must not overlap.
	slices.SortFunc(spans, func(x, y span) int { return cmp.Compare(x.a, y.a) })
	for i := 1; i < len(spans); i++ {
		if spans[i].a < spans[i-1].b {
			return fmt.Errorf("arena spans overlap at %d", spans[i].a)
		}
	}
	if ttlLive != s.ttlLive {
		return fmt.Errorf("%d live entries with a deadline, recorded %d", ttlLive, s.ttlLive)
	}
	if s.idx.Len() > 2*s.ttlLive+256 {
		return fmt.Errorf("expiry index holds %d items for %d entries with a deadline", s.idx.Len(), s.ttlLive)
	}
	bad := false
	s.idx.Ascend(func(it expiry.Item) bool {
		bad = int(it.Slot) >= s.ents.len() && s.live > 0
		return !bad
	})
	if bad {
		return errors.New("expiry index names a slot past the slot array")
	}
	seen := make(map[uint32]bool, len(s.free))
	for _, f := range s.free {
		if int(f) >= s.ents.len() || s.ents.get(f) != 0 || seen[f] {
			return fmt.Errorf("free stack names slot %d, which is live, repeated or out of range", f)
		}
		seen[f] = true
	}
	if len(s.free)+live != s.ents.len() {
		return fmt.Errorf("free %d + live %d != slots %d", len(s.free), live, s.ents.len())
	}
	return nil
}
