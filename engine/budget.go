package engine

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tidekv/tide/evict"
)

// MaxEntrySize is the largest key + value, in bytes, the engine stores on
// any platform and under any configuration. Under Config.MaxBytes an entry
// is storable iff len(key) + len(value) ≤ MaxEntrySize and
// len(key) + len(value) + EntryOverhead ≤ MaxBytes; a larger one is
// ErrTooLarge. The shard count plays no part.
const MaxEntrySize = 1<<30 - 1

// budget is the engine-wide byte budget of Config.MaxBytes: one cap for the
// whole engine, whatever its shard count.
//
// Algorithm. used counts the accounted bytes of resident entries plus the
// bytes held by writes in progress; a compare-and-swap keeps it ≤ max. A
// write that grows the engine by n bytes holds n (a room) before it changes
// anything, and turns what it holds into resident bytes as it applies;
// removals give their bytes back. When the budget cannot give the bytes,
// the write makes room, holding only the lock(s) of its own shard(s):
//
//  1. it reclaims due entries of its shards (they are gone already);
//  2. if the engine's evictable bytes (an engine-wide counter of what the
//     policies track) can cover the rest, it evicts its shards' victims;
//  3. if that is not enough, it releases its locks, keeping what it freed
//     (so no other writer can take it), and visits the shards one at a
//     time, each under its own lock only, reclaiming due entries and then
//     (if step 2's check passed) evicting victims, until it holds enough;
//     then it starts over from its own lookup (the key may have changed
//     meanwhile) with what it holds. A visit that cannot get enough ends
//     the write with ErrOutOfMemory.
//
// Bytes freed while making room go to the write that freed them (shard
// retaining), never back to the budget, so a write that makes room keeps it.
// No shard lock is ever taken while another is held, except by Commit and
// Check, which take theirs in ascending order and visit only with none
// held: making room cannot deadlock. Each visit rounds gets the write more
// bytes than it held, and a write never needs more than its entries' size,
// so the rounds end.
//
// Cost: a write that grows an entry or adds one does one compare-and-swap
// on used and an add on resident (and, when it changes evictable bytes,
// an add on evictable); an overwrite of the same size touches none of
// them. Steps 1–2 cost what a per-shard cap costs; a visit costs one lock
// per shard visited. The counters are shared by every core: writes that
// change sizes in a capped engine contend on one cache line (reads do not
// touch it). An uncapped engine has no budget.
type budget struct {
	max       int64
	used      atomic.Int64  // resident + held by writes in progress; ≤ max
	resident  atomic.Int64  // accounted bytes of resident entries (Stats.Bytes)
	evictable atomic.Int64  // accounted bytes of entries tracked by a policy
	next      atomic.Uint64 // the shard where the next visit starts
	// carriers counts the writes holding room while they hold no shard
	// lock (between rounds). While it is 0, used = resident whenever a
	// shard lock is held: every round gives back its unused room before it
	// unlocks (endRound).
	carriers atomic.Int64
}

// room is what one write holds of the budget across its rounds.
type room struct {
	held  int64 // bytes held for the write and not yet resident
	short int64 // with errVisit: bytes the write still lacks
	evict bool  // with errVisit: whether the visit may evict live entries
	// keys: with errVisit, the keys the write writes or deletes, which
	// the visit must not evict to make room for the write itself.
	keys []string
	// carried: the write counts in budget.carriers.
	carried bool
}

// errVisit reports that a write's own shards cannot make the room it
// needs: it must release its locks, visit the shards (Engine.visit), and
// start over. It never leaves the package.
var errVisit = errors.New("tide: internal: make room in other shards")

// roomPart is one locked shard a write may make room in, with the slots it
// writes or deletes (never evicted to make room for itself).
type roomPart struct {
	s       *shard
	exclude []uint32
}

// take moves n more bytes of the budget into r, if they are free.
func (b *budget) take(r *room, n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			r.held += n
			return true
		}
	}
}

// has reports whether r holds need bytes, taking the difference from the
// budget if it is free.
func (b *budget) has(r *room, need int64) bool {
	return r.held >= need || b.take(r, need-r.held)
}

// endRound ends a round of a write, before it releases its locks: a round
// that needs a visit keeps its room (and counts as a carrier), any other
// gives it back. b may be nil (no cap).
func (b *budget) endRound(r *room, err error) {
	switch {
	case b == nil:
	case err != errVisit:
		b.release(r)
	case !r.carried:
		r.carried = true
		b.carriers.Add(1)
	}
}

// release gives back what r holds. b may be nil (no cap).
func (b *budget) release(r *room) {
	if b != nil && r.held != 0 {
		b.used.Add(-r.held)
	}
	r.held = 0
}

// reserveLocked makes r hold at least need bytes, for a write that holds
// the exclusive lock of every shard in parts: steps 1 and 2 of the
// algorithm. It returns nil, errVisit (r.short and r.evict say what the
// visit must do), or ErrClosed. The excluded entries may be hidden from
// their policies: the caller must call syncPolicyLocked for each of them
// afterwards, whether or not reserveLocked succeeded.
func (b *budget) reserveLocked(r *room, need int64, now int64, parts []roomPart, ev *[]Removal) error {
	if b.has(r, need) {
		return nil
	}
	for _, p := range parts {
		p.s.retaining = true
		for {
			_, more := p.s.reclaimDueLocked(now, 64, ev)
			p.s.keepLocked(r)
			if b.has(r, need) || !more {
				break
			}
		}
		p.s.retaining = false
		if b.has(r, need) {
			return nil
		}
	}
	for _, p := range parts {
		p.s.hideLocked(p.exclude)
	}
	if r.held+b.max-b.used.Load()+b.evictable.Load() < need {
		// Evicting everything evictable would not do: only due entries
		// elsewhere may help, and nothing live is evicted.
		r.short, r.evict = need-r.held, false
		r.keepKeys(parts)
		return errVisit
	}
	for _, p := range parts {
		s := p.s
		s.retaining = true
		for s.pol != nil && s.evictb > 0 && !b.has(r, need) {
			if !s.evictOneLocked(now, ev) {
				break
			}
			s.keepLocked(r)
		}
		s.retaining = false
		if b.has(r, need) {
			return nil
		}
	}
	r.short, r.evict = need-r.held, true
	r.keepKeys(parts)
	return errVisit
}

// keepKeys records in r the keys of the entries parts exclude, for the
// visit: it runs without the write's locks, so it finds them by key.
func (r *room) keepKeys(parts []roomPart) {
	r.keys = r.keys[:0]
	for _, p := range parts {
		for _, x := range p.exclude {
			if p.s.ents.get(x) != 0 {
				r.keys = append(r.keys, string(p.s.at(x).key()))
			}
		}
	}
}

// visit is step 3: with no shard lock held, it takes the shards one at a
// time, reclaiming due entries and, if r.evict, evicting victims, until r
// holds r.short more bytes. It returns nil if it got them, else
// ErrOutOfMemory (or ErrClosed if the engine was closed meanwhile).
func (e *Engine) visit(r *room, ev *[]Removal) error {
	b := e.b
	want := r.held + r.short
	r.short = 0
	n := uint64(len(e.shards))
	start := b.next.Add(1)
	for i := uint64(0); i < n && r.held < want; i++ {
		s := &e.shards[(start+i)&e.mask]
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		now := e.now()
		s.retaining = true
		removed := false
		for r.held < want {
			k, more := s.reclaimDueLocked(now, 64, ev)
			s.keepLocked(r)
			removed = removed || k > 0
			if !more {
				break
			}
		}
		// The write's own entries are not victims of the room it makes.
		var mine []uint32
		for _, k := range r.keys {
			if ks, h := e.shardFor(k); ks == s {
				if x, ok := s.findLocked(k, h); ok {
					mine = append(mine, x)
				}
			}
		}
		s.hideLocked(mine)
		for r.evict && s.pol != nil && s.evictb > 0 && r.held < want {
			if !s.evictOneLocked(now, ev) {
				break
			}
			s.keepLocked(r)
			removed = true
		}
		for _, x := range mine {
			if s.ents.get(x) != 0 { // not reclaimed as due meanwhile
				s.syncPolicyLocked(s.at(x), 0, 0, false)
			}
		}
		s.retaining = false
		if removed {
			s.maybeShrinkLocked()
		}
		s.flushEvictedLocked() // the evictions reach the log now
		s.mu.Unlock()
	}
	if !b.has(r, want) {
		return fmt.Errorf("%w: MaxBytes %d is full of entries that may not be evicted", ErrOutOfMemory, b.max)
	}
	return nil
}

// keepLocked moves the bytes the shard retained into r.
func (s *shard) keepLocked(r *room) {
	r.held += s.retained
	s.retained = 0
}

// evictOneLocked evicts the policy's victim and reports whether there was
// one.
func (s *shard) evictOneLocked(now int64, ev *[]Removal) bool {
	s.flushPendingLocked()
	s.drainReadsLocked() // the victim is chosen knowing every logged read
	h, ok := s.pol.Victim(now)
	if !ok || int(h) >= s.ents.len() || s.ents.get(uint32(h)) == 0 || s.at(uint32(h)).flags()&flagTracked == 0 {
		// Unreachable while the policy and evictb are consistent (Check
		// verifies both); fail safe.
		return false
	}
	s.removeLocked(uint32(h), 0, CauseEvicted, ev)
	return true
}

// hideLocked hides the entries at slots from the policy, so that making
// room never evicts an entry being written. The caller re-adds them with
// syncPolicyLocked.
func (s *shard) hideLocked(slots []uint32) {
	for _, x := range slots {
		if s.ents.get(x) == 0 {
			continue
		}
		if en := s.at(x); en.flags()&flagTracked != 0 {
			s.flushPendingLocked()
			s.pol.Remove(evict.Handle(x))
			s.addEvictableLocked(-en.size())
			en.setFlags(en.flags() &^ flagTracked)
		}
	}
}

// addEvictableLocked changes the shard's (and the budget's) evictable
// bytes.
func (s *shard) addEvictableLocked(n int64) {
	s.evictb += n
	if s.b != nil && n != 0 { // an add of 0 would still take the shared line
		s.b.evictable.Add(n)
	}
}

// addBytesLocked changes the shard's (and the budget's) resident bytes. It
// does not touch the budget's used bytes: a growth was held before, and a
// shrink or removal gives its bytes back through the caller.
func (s *shard) addBytesLocked(n int64) {
	s.bytes += n
	if s.b != nil && n != 0 { // an overwrite of the same size changes nothing
		s.b.resident.Add(n)
	}
}

// finish ends a write: it gives back the room r holds and did not use. b
// may be nil (no cap).
func (b *budget) finish(r *room) {
	b.release(r)
	if r.carried {
		b.carriers.Add(-1)
	}
}

// checkSize returns ErrTooLarge for an entry that can never be stored: key
// + value over MaxEntrySize, or with EntryOverhead over the cap. b may be
// nil (no cap).
func (b *budget) checkSize(klen, vlen int) error {
	kv := int64(klen) + int64(vlen)
	if kv > MaxEntrySize {
		return fmt.Errorf("%w: key + value = %d bytes, MaxEntrySize is %d", ErrTooLarge, kv, MaxEntrySize)
	}
	if b != nil && kv+EntryOverhead > b.max {
		return fmt.Errorf("%w: key + value + EntryOverhead = %d bytes, MaxBytes is %d", ErrTooLarge, kv+EntryOverhead, b.max)
	}
	return nil
}
