package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
	"github.com/tidekv/tide/internal/table"
)

type shard struct {
	// mu guards every field of the shard except pub and rlog (which are
	// safe for concurrent use). Writers take it exclusively, which makes
	// mu.seq odd for as long as they hold it. Reads of a key without a TTL
	// do not take it at all (see probe); other reads take it shared.
	//
	// Layout: what an optimistic reader reads of the shard (mu.seq, pub,
	// rlog) comes first, and rw and the fields writers change follow
	// at least a cache line later, so that a writer at work in the shard
	// (locking, appending to the arena, counting) does not take the line
	// readers need from them; only seq itself moves, twice a write. (A
	// shard is 608 bytes, so in every other shard of the array these
	// fields straddle two lines; shards padded to whole lines made no
	// measurable difference: bench/README, tenth and twelfth passes.)
	mu   shardMu
	pub  atomic.Pointer[storeView] // the arrays peek reads; set by publishLocked
	rlog *readLog                  // reads peek reports to pol; nil without a policy
	// sample is calmPick's mask: 0 (every event reaches the policy) or
	// calmSample-1 while the shard is calm (see readlog.go). Written under
	// the exclusive lock, read by readers.
	sample atomic.Uint32
	// views counts the Views of the shard whose fn may be running (see
	// viewCounts); allocated by the shard's first View, so that an engine
	// that never calls View pays nothing for it.
	views atomic.Pointer[viewCounts]
	_     [64]byte     // the readers' line ends here
	rw    sync.RWMutex // mu's lock (see shardMu)

	tab     table.Table
	ents    slots    // slot → record offset + 1; 0 = free
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
	// midCommit is set while a Commit applies its ops to the shard: a
	// compaction must not show readers a state with only some of them
	// (see openLocked).
	midCommit bool
	// bulk is set while New replays the durability log: an arena that
	// fills doubles instead of growing by a quarter, and trimLocked ends
	// it (fewer, larger copies while the whole data set streams in).
	bulk bool
	seed keySeed  // the engine's; set once by New
	log  shardLog // the durability log's state (see durable.go)

	writes, expired, evicted, deleted, replaced uint64

	sink uint64 // keeps the reclaim loop's warming loads alive

	locks uint64 // exclusive locks taken (see lockedLocked)

	// calmBytes and calmEvicted are bytes and evicted at the last
	// drain, calmHits the read hits drained and the overwrites that kept
	// size and deadline since the shard last grew or evicted, counted up
	// to live (see sampleLocked).
	calmBytes   int64
	calmEvicted uint64
	calmHits    int

	// deferUpdate lets the next syncPolicyLocked of a written entry that
	// stays tracked leave its policy Update in pending, for Unlock to make
	// once the sequence count is even again (see shardMu). Set by a
	// single-key write around its work, whose last policy call that is.
	// Every other policy call under the exclusive lock makes the pending
	// Update first (flushPendingLocked), so the policy sees the changes
	// in the order they were made.
	deferUpdate bool
	pending     pendingUpdate

	_ [64]byte // keep the next shard's lock off this shard's last line
}

// shardMu is a shard's lock: an RWMutex plus a sequence count that lets
// readers work without it (a seqlock). Lock makes seq odd and Unlock makes
// it even again, so a reader that reads seq, then the shard's storage with
// atomic loads, then seq again, and finds the same even number, has read a
// state no writer changed in between. Lock first hands the reads buffered
// by such readers to the eviction policy (lockedLocked); Unlock
// publishes the shard's arrays if a writer replaced one (publishLocked).
// RLock and RUnlock are the RWMutex's.
//
// seq is odd only while the storage may change: policy work that changes
// none of it runs with the RWMutex held but seq even, so that optimistic
// readers of the shard do not wait for it — Lock hands the logged reads
// to the policy before it makes seq odd, and Unlock makes a write's
// deferred policy Update (pendingUpdate) after it makes seq even. Both
// read storage (ents, flags) without changing it: a reader validating
// meanwhile reads a state no writer is changing. So does a compaction
// (compactLocked), which copies the arena into new arrays while seq is
// even (openLocked) and makes it odd again to install them, and a reader
// that drains the read log (drainIfFree), which takes the RWMutex only.
//
// The RWMutex is the shard's field rw, a cache line away from seq (see
// shard's layout), so that RLock and Lock, which write the mutex's state,
// do not take seq's line from optimistic readers.
type shardMu struct {
	seq atomic.Uint64
	s   *shard // the shard this lock guards; set once by New
}

func (m *shardMu) Lock() {
	m.s.rw.Lock()
	m.s.lockedLocked()
	m.seq.Add(1)
}

// TryLock is Lock if the lock is free.
func (m *shardMu) TryLock() bool {
	if !m.s.rw.TryLock() {
		return false
	}
	m.s.lockedLocked()
	m.seq.Add(1)
	return true
}

// drainEvery is how many exclusive locks of a shard go by between two
// drains of its read log (a drain also precedes every eviction): reading
// the log's stripes costs a cache miss each, so it is amortised.
const drainEvery = 8

// lockedLocked is what every exclusive lock starts with: every drainEvery-th
// time, the logged reads go to the policy.
func (s *shard) lockedLocked() {
	if s.locks++; s.locks%drainEvery == 0 {
		s.drainReadsLocked()
	}
}

func (m *shardMu) Unlock() {
	s := m.s
	s.publishLocked()
	m.seq.Add(1)
	s.flushPendingLocked()
	s.rw.Unlock()
}

// pendingUpdate is a policy Update a write deferred (see deferUpdate).
type pendingUpdate struct {
	ok bool
	h  evict.Handle
	e  evict.Entry
}

// flushPendingLocked makes the deferred policy Update, if any. It changes
// nothing an optimistic reader reads.
func (s *shard) flushPendingLocked() {
	if s.pending.ok {
		s.pending.ok = false
		s.pol.Update(s.pending.h, s.pending.e)
	}
}

func (m *shardMu) RLock()   { m.s.rw.RLock() }
func (m *shardMu) RUnlock() { m.s.rw.RUnlock() }

// storeView is what an optimistic reader needs of a shard's storage: the
// table's words and the arena up to its capacity (a table word names its
// record's offset, and the record its slot: the reader does not read
// ents). It is replaced (never changed) when a writer replaces one of the
// arrays; the arrays' words are changed in place with atomic stores.
type storeView struct {
	words []uint64
	arena []byte
}

// publishLocked makes pub describe the shard's current arrays, allocating a
// new view only when an array was replaced (a table resize or remap, an
// arena move or rebuild): amortised O(1) per write.
func (s *shard) publishLocked() {
	w := s.tab.Words()
	if p := s.pub.Load(); p != nil && len(p.words) == len(w) && unsafe.SliceData(p.words) == unsafe.SliceData(w) &&
		cap(p.arena) == cap(s.arena) && unsafe.SliceData(p.arena) == unsafe.SliceData(s.arena) {
		return
	}
	s.pub.Store(&storeView{w, s.arena[:cap(s.arena)]})
}

// hash returns the engine's hash of a stored key: equal to what
// Engine.shardFor computes for the same key as a string.
func (s *shard) hash(key []byte) uint64 {
	return s.seed.keyHash(unsafe.String(unsafe.SliceData(key), len(key)))
}

// findLocked returns the slot holding key. s.mu must be held (shared or
// exclusive).
func (s *shard) findLocked(key string, hash uint64) (uint32, bool) {
	slot, _, ok := s.findRecordLocked(key, hash)
	return slot, ok
}

// findRecordLocked is findLocked that also returns the arena offset of
// the key's record. s.mu must be held (shared or exclusive).
func (s *shard) findRecordLocked(key string, hash uint64) (slot, off uint32, ok bool) {
	tag := table.Tag(hash)
	i := s.tab.Start(tag)
	for {
		ref, ok := s.tab.Next(tag, &i)
		if !ok {
			return 0, 0, false
		}
		off := refOff(ref)
		// The meta word is read atomically: a View may set flagViewed
		// without the exclusive lock.
		m := atomic.LoadUint64(hdr64(s.arena, off+hdrMeta))
		kw, _, ok := metaKW(m)
		if !ok {
			kw, _ = entry{s, 0, off}.lengths()
		}
		if int(kw&maxKeyLen) == len(key) && string(s.arena[keyAt(off, kw):keyAt(off, kw)+kw&maxKeyLen]) == key {
			return uint32(m), off, true
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
	return s.ents.push()
}

// allocLocked reserves n contiguous arena bytes and returns their offset.
// It may rebuild the arena, which moves every live entry's bytes (offsets
// in ents are updated; slices of the old arena must not be used after).
func (s *shard) allocLocked(n int) uint32 {
	n = (n + 7) &^ 7 // records stay 8-byte aligned
	// In 64 bits: on a 32-bit platform an arena near maxArena and an
	// entry near MaxEntrySize overflow an int.
	if int64(len(s.arena))+int64(n) > int64(cap(s.arena)) {
		s.compactLocked(n)
	}
	off := len(s.arena)
	s.arena = s.arena[:off+n]
	return uint32(off)
}

// arenaRoomLocked reports, as ErrOutOfMemory, whether the shard's arena
// cannot take n more bytes of live records: live bytes + n would pass
// maxArena (offsets are 32-bit). Every path that adds a record checks it
// before it changes anything, so that allocLocked always finds room.
func (s *shard) arenaRoomLocked(n int64) error {
	if int64(len(s.arena)-s.garbage)+n > maxArena {
		return fmt.Errorf("%w: shard arena full (%d bytes)", ErrOutOfMemory, maxArena)
	}
	return nil
}

// compactLocked rebuilds the arena with only live bytes, room for extra
// more, and headroom: 25% of that, or up to twice the garbage found (at
// most the live bytes again) when the arena filled with garbage. An
// overwrite that cannot be done in place (a longer value, or a record a
// View marked) appends, so a shard under such overwrites fills its arena
// with garbage; the larger headroom makes it rebuild less often,
// copying about as many live bytes as it appended instead of four times
// as many, at the price of an arena up to twice its live bytes.
//
// An arena with little garbage (at most an eighth) is moved instead: its
// bytes are copied as they are, so offsets (and ents) stay valid and no
// record is visited — a few memory-bandwidth milliseconds per 100 MB where
// a rebuild follows every slot to a scattered record (a third of the time
// of replaying a log was rebuilds while arenas grew).
//
// Either copy takes time proportional to the shard, so it runs with the
// shard open to optimistic readers (openLocked): it only reads the old
// arrays and writes new ones, which it installs once the sequence count is
// odd again.
func (s *shard) compactLocked(extra int) {
	open := s.openLocked()
	// Sizes in 64 bits, as in allocLocked: on a 32-bit platform they
	// may pass MaxInt before they are held to maxArena.
	if s.garbage <= len(s.arena)/8 {
		want := int64(len(s.arena)) + int64(extra)
		room := max(want/4, 256)
		if s.bulk {
			room = max(want, 256)
		}
		if want+room <= maxArena {
			s.moveLocked(int((want+room)&^7), open)
			return
		}
	}
	want := int64(len(s.arena)-s.garbage) + int64(extra)
	want += max(want/4, min(want, 2*int64(s.garbage)))
	want = min(max(want, 256), maxArena)
	s.rebuildLocked(int(want), open)
}

// insertLocked files ref (a record's recRef) under tag in the table. A
// table that must grow first (a rehash, time proportional to the shard)
// grows as an arena compacts, with the shard open to optimistic readers:
// the new array is built while they read the old one.
func (s *shard) insertLocked(tag uint32, ref uint32) {
	if s.tab.Full() {
		open := s.openLocked()
		s.tab.Grow()
		s.closeLocked(open)
	}
	s.tab.Insert(tag, ref)
}

// openLocked lets optimistic readers read the shard while the writer
// holding the lock copies the arena (compactLocked) or the table
// (insertLocked) into new arrays, and reports whether it did: it publishes the current arrays and makes the sequence count
// even, so a reader reads a state in which every change the writer made
// so far is complete; the copy changes nothing a reader reads; closeLocked
// makes the count odd again before the new arrays are installed, so a
// reader that overlapped the install fails its validation. It does not
// while a Commit is applying its ops (midCommit): a reader would see some
// of a transaction's writes and not the others.
func (s *shard) openLocked() bool {
	if s.midCommit || s.mu.seq.Load()&1 == 0 {
		return false
	}
	s.publishLocked()
	s.mu.seq.Add(1)
	if testHookCompacting != nil {
		testHookCompacting(s)
	}
	return true
}

// closeLocked ends what openLocked opened.
func (s *shard) closeLocked(open bool) {
	if open {
		s.mu.seq.Add(1)
	}
}

// testHookCompacting, if set (by tests), is called while a compaction or a
// table's growth has the shard open to optimistic readers.
var testHookCompacting func(s *shard)

// rebuildLocked copies the live records into a new arena of capacity n (at
// least the live bytes), in slot order, with a new ents array and a new
// table array pointing into it, and installs the three after
// closeLocked(open).
func (s *shard) rebuildLocked(n int, open bool) {
	na := newArena(n &^ 7)
	ne := s.ents.zeroed()
	for i := range s.ents.len() {
		o := s.ents.get(uint32(i))
		if o == 0 {
			continue
		}
		en := entry{s, uint32(i), o - 1}
		off := len(na)
		// The header word by word with atomic loads (a View may set
		// flagViewed meanwhile, without the exclusive lock), the key
		// and value (changed only under it) in one copy. No View reads
		// the copy: it may be overwritten in place, so flagViewed is
		// not carried over.
		// A record whose TTL was cleared loses its deadline word.
		d, kw, vl := en.deadline(), en.kw(), en.vlen()
		kl := kw & maxKeyLen
		flags := kw>>24&^(flagViewed|flagDeadline) | deadlineFlag(d, 0)
		na = na[:off+recSize(int(kl), int(vl), flags)]
		nkw := putHeader(na, uint32(off), en.version(), d, vl, kl, flags, uint32(i))
		copy(na[keyAt(uint32(off), nkw):], s.arena[keyAt(en.off, kw):int(en.off)+en.recLen()])
		ne.set(uint32(i), uint32(off)+1)
	}
	// Every table word names its record's old offset; the old record
	// names its slot, and ne the slot's new offset.
	old := s.arena
	tab := s.tab
	tab.Remap(func(ref uint32) uint32 {
		return recRef(ne.get(uint32(atomic.LoadUint64(hdr64(old, refOff(ref)+hdrMeta)))) - 1)
	})
	s.closeLocked(open)
	s.arena, s.ents, s.tab = na, ne, tab
	s.garbage = 0
}

// moveLocked moves the arena, garbage and all, into a new array of capacity
// n (at least len(s.arena)). Every word is read with an atomic load: a View
// may set flagViewed in a header meanwhile without the exclusive lock. The
// copy keeps flags as they are, flagViewed included (conservative: Views
// of the old array read bytes that are never written again, so only Views
// of the new one need it). Readers of the old array keep reading bytes
// that no longer change. The new array is installed after
// closeLocked(open).
func (s *shard) moveLocked(n int, open bool) {
	na := newArena(n)[:len(s.arena)]
	src := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(s.arena))), len(s.arena)/8)
	dst := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(na))), len(na)/8)
	for i := range src {
		dst[i] = atomic.LoadUint64(&src[i])
	}
	s.closeLocked(open)
	s.arena = na
}

// trimLocked ends bulk mode. An arena with more than 25% headroom (it
// doubled late in the replay, or was presized for more than it got) moves
// into one with 12.5%, and one more than an eighth garbage (a recovery
// under a lowered MaxBytes evicted) is rebuilt with 12.5%: a recovered
// engine holds no more memory than one that grew by quarters.
func (s *shard) trimLocked() {
	s.bulk = false
	n := len(s.arena)
	switch live := n - s.garbage; {
	case s.garbage > n/8:
		s.rebuildLocked(live+live/8, false)
	case cap(s.arena)-n > n/4+4096:
		s.moveLocked(n+n/8, false)
	}
}

// maybeShrinkLocked releases memory after removals: all of it when the shard
// is empty, or the garbage when it exceeds half of a large arena.
func (s *shard) maybeShrinkLocked() {
	if s.live == 0 {
		s.idx.Clear() // every item left is garbage
		if cap(s.arena) > 64<<10 || s.ents.len() > 1024 {
			s.arena = nil
			s.ents = slots{}
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
	s.flushPendingLocked() // the policy sees changes in order
	deferred := s.deferUpdate
	s.deferUpdate = false
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
		size := sizeOf(en.lengths())
		s.pol.Add(h, evict.Entry{Hash: hash, Size: size, Deadline: en.deadline()})
		s.addEvictableLocked(size)
		en.setFlags(en.flags() | flagTracked)
	case was && now:
		if size := sizeOf(en.lengths()); written || oldSize != size {
			u := evict.Entry{Hash: hash, Size: size, Deadline: en.deadline()}
			if deferred {
				s.pending = pendingUpdate{ok: true, h: h, e: u}
			} else {
				s.pol.Update(h, u)
			}
			s.addEvictableLocked(size - oldSize)
		}
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
	s.tab.Delete(table.Tag(hash), recRef(en.off))
	hadTTL := en.deadline() != 0
	kw, vl := en.lengths()
	size := sizeOf(kw, vl)
	if kw>>24&flagTracked != 0 {
		s.flushPendingLocked()
		s.pol.Remove(evict.Handle(slot))
		s.addEvictableLocked(-size)
	}
	s.addBytesLocked(-size)
	switch {
	case s.retaining:
		s.retained += size
	case s.b != nil:
		s.b.used.Add(-size)
	}
	s.garbage += recSize(int(kw&maxKeyLen), int(vl), kw>>24)
	s.live--
	switch cause {
	case CauseExpired:
		s.expired++
	case CauseEvicted:
		s.evicted++
	case CauseDeleted:
		s.deleted++
	}
	s.ents.set(slot, 0)
	s.free = append(s.free, slot)
	if hadTTL {
		s.ttlLive-- // its index item is now garbage
		s.boundIndexLocked()
	}
}
