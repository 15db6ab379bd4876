package engine

import (
	"encoding/binary"
	"iter"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tidekv/tide/internal/table"
)

// Get returns a copy of key's value.
func (e *Engine) Get(key string) ([]byte, bool) {
	return e.AppendGet(nil, key)
}

// AppendGet appends key's value to dst and returns the extended buffer. It
// allocates nothing when dst has room.
func (e *Engine) AppendGet(dst []byte, key string) ([]byte, bool) {
	s, h := e.shardFor(key)
	for range peekTries {
		// probe's result, decided as View decides it: written out in
		// both, since a function returning the decision (it does not
		// inline) cost a View 27 of its 538 instructions (cachegrind).
		arena, off, kw, vl, seq, r := s.probe(key, h)
		switch {
		case r == peekMiss:
			r = e.absent(s, h, seq, true, procStripe())
		case r == peekHit && kw>>24&flagDeadline != 0:
			_, _, r = e.liveAt(s, arena, off, kw, seq)
		}
		switch r {
		case peekHit:
			n := len(dst)
			dst = loadValue(dst, arena, valueAt(off, kw), int(vl))
			if s.mu.seq.Load() == seq {
				e.hitAt(s, arena, off, kw, seq, procStripe())
				return dst, true
			}
			dst = dst[:n]
		case peekMiss:
			return dst, false
		case peekDue:
			e.expireDue(s, key, h)
			return dst, false
		}
		if !s.mu.awaitWriter() {
			break
		}
	}
	en, _, ok := e.rlockLive(s, key, h, true)
	if !ok {
		return dst, false
	}
	dst = append(dst, en.value()...)
	tracked := en.flags()&flagTracked != 0
	s.mu.RUnlock()
	e.readHit(s, en.slot, tracked)
	return dst, true
}

// View calls fn with key's value in place, without copying it, and reports
// whether the key was found (fn is not called on a miss). It allocates
// nothing, except on the first View of a shard: the shard's View counts,
// 576 bytes, kept for the engine's life.
//
// fn runs after the engine has released every lock, on the calling
// goroutine, so it may call any method of the engine, writers of the same
// key included; a write that fn (or anyone) makes while fn runs does not
// change the bytes fn was given: fn sees the value as it was when View
// found it. fn must not modify value and must not retain it (or any
// sub-slice) after it returns: the engine reclaims that memory. To keep
// the value, copy it (or use Get or AppendGet).
//
// The bytes are safe to read for the whole of fn because View counts
// itself in the shard's viewCounts before it looks the key up and until fn
// returns, and marks the record (flagViewed) before it calls fn: a marked
// record's value is not overwritten in place while any View of the shard
// is in progress (an overwrite writes a new record), and an arena's bytes
// are never reused for another record, only replaced by a new arena (see
// record.go). The cost: two atomic adds on the line of the stripe of the
// P the View started on (procStripe), and one compare-and-swap on the
// record's header the first time a record is viewed after a write.
func (e *Engine) View(key string, fn func(value []byte)) bool {
	s, h := e.shardFor(key)
	r0 := procStripe()
	vc := s.viewCountsLoad().enter(r0)
	defer vc.Add(-1)
	for range peekTries {
		arena, off, kw, vl, seq, r := s.probe(key, h)
		switch {
		case r == peekMiss:
			r = e.absent(s, h, seq, true, r0)
		case r == peekHit && kw>>24&flagDeadline != 0:
			_, _, r = e.liveAt(s, arena, off, kw, seq)
		}
		switch r {
		case peekHit:
			if s.mu.seq.Load() == seq && markViewed(arena, off, kw) && s.mu.seq.Load() == seq {
				e.hitAt(s, arena, off, kw, seq, r0)
				v := valueAt(off, kw)
				fn(arena[v : v+vl])
				return true
			}
		case peekMiss:
			return false
		case peekDue:
			e.expireDue(s, key, h)
			return false
		}
		if !s.mu.awaitWriter() {
			break
		}
	}
	en, _, ok := e.rlockLive(s, key, h, true)
	if !ok {
		return false
	}
	en.markViewed()
	v := en.value()
	tracked := en.flags()&flagTracked != 0
	s.mu.RUnlock()
	e.readHit(s, en.slot, tracked)
	fn(v)
	return true
}

// GetItem returns a copy of key's value with its version and TTL.
func (e *Engine) GetItem(key string) (Item, bool) {
	s, h := e.shardFor(key)
	var pk peeked
	for range peekTries {
		switch e.peek(s, key, h, true, &pk); pk.r {
		case peekHit:
			it := Item{
				Value:   loadValue(make([]byte, 0, pk.vlen), pk.arena, pk.val, pk.vlen),
				Version: atomic.LoadUint64(hdr64(pk.arena, pk.off+hdrVersion)),
				TTL:     pk.ttl(),
				Pinned:  pk.kw>>24&flagPinned != 0,
			}
			if pk.valid(s) {
				e.peekHit(s, &pk)
				return it, true
			}
		case peekMiss:
			return Item{}, false
		case peekDue:
			e.expireDue(s, key, h)
			return Item{}, false
		}
		if !s.mu.awaitWriter() {
			break
		}
	}
	en, now, ok := e.rlockLive(s, key, h, true)
	if !ok {
		return Item{}, false
	}
	it := itemOf(en, now)
	tracked := en.flags()&flagTracked != 0
	s.mu.RUnlock()
	e.readHit(s, en.slot, tracked)
	return it, true
}

// TTL reports the time left before key expires: ok is false if the key does
// not exist; ttl is NoTTL if it exists without expiry. It counts no hit or
// miss and is no access for the eviction policy.
func (e *Engine) TTL(key string) (ttl time.Duration, ok bool) {
	s, h := e.shardFor(key)
	var pk peeked
	for range peekTries {
		switch e.peek(s, key, h, false, &pk); pk.r {
		case peekHit:
			if pk.valid(s) {
				return pk.ttl(), true
			}
		case peekMiss:
			return 0, false
		case peekDue:
			e.expireNow(s, key, h)
			return 0, false
		}
		if !s.mu.awaitWriter() {
			break
		}
	}
	en, now, ok := e.rlockLive(s, key, h, false)
	if !ok {
		return 0, false
	}
	ttl = NoTTL
	if d := en.deadline(); d != 0 {
		ttl = time.Duration(d - now)
	}
	s.mu.RUnlock()
	return ttl, true
}

// peekResult is what an optimistic read (probe, peek) found.
type peekResult uint8

const (
	peekRetry peekResult = iota // inconclusive (a writer was at work): try again
	peekHit
	peekMiss
	peekDue // the key's deadline had passed (validated): expire it, report a miss
)

// A read that finds a writer at work in its shard (peekRetry) waits for it,
// up to peekSpins loads of the sequence count (a few microseconds), and
// tries again, up to peekTries times in all, before it reads under the lock
// (at once if the writer outlasts one wait, see awaitWriter): a write holds
// the lock for about a microsecond, longer when its lines must come from
// another core, while a reader that blocks in RLock behind it parks its
// goroutine, writes the mutex's reader count (a line every reader of the
// shard then shares) and holds off the next writer. A parked goroutine runs
// again only when the scheduler wakes a thread for it: tens of microseconds
// on a virtual machine whose idle core must be woken. With 256 loads, an
// execution trace of cmd/speed (View, 50/50, -cpu 2) showed goroutines
// woken by RWMutex.Unlock waiting a tenth of the run to run again, and the
// process used 1.3–1.8 of its 2 cores; with 4096, 1.9, and the View write
// mixes at -cpu 2 ran 20–30% faster (bench/README, tenth pass).
const (
	peekTries = 4
	peekSpins = 4096
)

// awaitWriter waits, up to peekSpins loads, until no writer holds the
// lock (the sequence count is even), and reports whether none does. A
// writer still at work after that long is slow (an fsync under the lock,
// a goroutine preempted while it holds it): the read stops trying and
// takes the lock, so that a reader spins at most once that long for it.
func (m *shardMu) awaitWriter() bool {
	for range peekSpins {
		if m.seq.Load()&1 == 0 {
			return true
		}
	}
	return false
}

// peeked is what peek found: on a hit, where the record and its value are
// in the arena the reader holds, and the sequence count to validate
// against.
type peeked struct {
	r     peekResult
	arena []byte
	off   uint32 // the record
	val   uint32 // its value (valueAt)
	vlen  int
	kw    uint32 // the record's key length and flags word
	seq   uint64
	// deadline is the record's (0: no TTL); now, if it is not 0, the
	// engine's time read within the validated window.
	deadline, now int64
}

// ttl is the time the record peek found has left (NoTTL if it has no
// deadline), as of peek's reading of the clock.
func (pk *peeked) ttl() time.Duration {
	if pk.deadline == 0 {
		return NoTTL
	}
	return time.Duration(pk.deadline - pk.now)
}

// probe looks key up without taking s.mu: the first half of a seqlock
// read (see shardMu). It reads s.mu.seq, then the published arrays
// (storeView), every word with an atomic load (table words, record
// headers, the key): a stale view may read any bytes of an old
// arena as a header or key, and some of those are written concurrently
// (flagViewed). It returns peekHit with the record it found (its offset,
// key length and flags word kw, and value length vl, in the arena it
// returns), peekMiss if the key is not there, and the sequence count it
// read; neither is validated yet. Anything inconclusive — a writer at
// work, a word pointing outside the arrays the reader holds (a stale
// view) — is peekRetry: the caller waits for the writer and tries again
// (see peekTries), then reads under the lock. The results come back in
// registers: filling a struct through a pointer, and reading it back,
// cost a View about 30 of its 600 instructions (cachegrind).
//
// A read built on probe (View, AppendGet, and peek for the others) then
// decides: a hit on a record with a deadline asks liveAt; a miss is
// validated and counted (absent); a live hit is read (the value with
// atomic loads: it may be overwritten in place, see storeValue), then
// validated: the same even count means no writer ran since the first read,
// so what the reader read is the state at that instant, the read's
// linearization point; then it counts the hit (hitAt). None of it writes
// memory shared by all readers of the shard (reading the clock for a key
// with a TTL may: with a clock not known to be monotonic, e.now keeps an
// engine-wide high-water mark; clock.Real is monotonic).
func (s *shard) probe(key string, h uint64) (arena []byte, off, kw, vl uint32, seq uint64, r peekResult) {
	seq = s.mu.seq.Load()
	p := s.pub.Load()
	if seq&1 != 0 || p == nil {
		return nil, 0, 0, 0, 0, peekRetry
	}
	tag := table.Tag(h)
	words := p.words
	n := len(words)
	home := table.Home(words, tag)
probing:
	for j, k := home, 0; k < n; k++ {
		w := atomic.LoadUint64(&words[j])
		if w == 0 {
			break
		}
		if uint32(w>>32) != tag {
			if !table.Goes(w, tag, home, j, n) {
				break
			}
			j = table.Step(j, n)
			continue
		}
		j = table.Step(j, n)
		off = refOff(uint32(w) - 1)
		if uint64(off)+hdrSize > uint64(len(p.arena)) {
			return nil, 0, 0, 0, 0, peekRetry
		}
		m := atomic.LoadUint64(hdr64(p.arena, off+hdrMeta))
		var ok bool
		if kw, vl, ok = metaKW(m); !ok {
			if uint64(off)+hdrWide+8 > uint64(len(p.arena)) {
				return nil, 0, 0, 0, 0, peekRetry
			}
			kw, vl = wideKW(m, atomic.LoadUint64(hdr64(p.arena, off+hdrWide)))
		}
		kl := kw & maxKeyLen
		if int(kl) != len(key) {
			continue
		}
		// The record's layout follows its flags (keyAt, valueAt), and
		// lengths read from a compact meta word fit a compact header, so
		// the header's length by the flags alone bounds it (recSize also
		// asks widthFlag, for writers' lengths).
		// In 64 bits: a value length from a stale view may be near 2^32,
		// where pad8 in 32 bits wraps to 0.
		if uint64(off)+uint64(hdrLen(kw>>24))+pad8(uint64(kl))+pad8(uint64(vl)) > uint64(len(p.arena)) {
			return nil, 0, 0, 0, 0, peekRetry
		}
		// Is the key at keyAt (8-byte aligned, padded to 8) key? Its
		// words are read with atomic loads, the range checked once
		// (arenaWords). Written out here: as a function (too costly to
		// inline) it cost a View 8 more instructions (cachegrind).
		kp := arenaWords(p.arena, keyAt(off, kw), len(key))
		i := 0
		for ; i+8 <= len(key); i += 8 {
			if atomic.LoadUint64((*uint64)(unsafe.Add(kp, i))) != nativeWord(key[i:i+8]) {
				continue probing
			}
		}
		if i == len(key) || keyTailEqual(unsafe.Add(kp, i), key[i:]) {
			return p.arena, off, kw, vl, seq, peekHit
		}
	}
	return nil, 0, 0, 0, seq, peekMiss
}

// liveAt decides whether the record probe found at off in arena, whose
// flags word kw has flagDeadline, is live: it reads the engine's clock
// between the first read of the sequence count (seq) and the validation,
// which is what reading it under the lock means for a seqlock reader: no
// writer ran between the reading and the state it is compared with, so
// the decision (live: peekHit, or due: peekDue, validated here) is that of
// the instant of the reading, and a reading that a writer may have made
// stale fails the validation (peekRetry). (TestEveryOpReadsClockUnderShardLock
// checks it: its clock changes the shard at every reading taken without
// the lock, and the read must not decide on such a reading.) It returns
// the deadline (0: none; the word may hold 0 after a TTL was cleared) and
// the reading (0 if it took none), for GetItem's and TTL's TTL.
func (e *Engine) liveAt(s *shard, arena []byte, off, kw uint32, seq uint64) (d, now int64, r peekResult) {
	d = int64(atomic.LoadUint64(hdr64(arena, off+deadlineOff(kw>>24))))
	if d == 0 {
		return 0, 0, peekHit
	}
	if now = e.now(); now < d {
		return d, now, peekHit
	}
	if s.mu.seq.Load() != seq {
		return 0, 0, peekRetry
	}
	return d, now, peekDue
}

// absent validates a miss of probe (seq is the count it read) and, if
// counted (every read but TTL), counts it in stripe r (procStripe) and
// logs it for the policy: peekMiss, or peekRetry if a writer ran
// meanwhile.
func (e *Engine) absent(s *shard, h uint64, seq uint64, counted bool, r uint32) peekResult {
	if s.mu.seq.Load() != seq {
		return peekRetry
	}
	if counted {
		e.readMiss(s, h, r)
	}
	return peekMiss
}

// peek is probe and the decisions that follow it, with the result in pk:
// GetItem's, TTL's and the tests' form of the optimistic read (View and
// AppendGet use probe directly). A hit is not validated yet (the caller
// validates after reading: pk.valid); a miss and a due key are.
func (e *Engine) peek(s *shard, key string, h uint64, counted bool, pk *peeked) {
	arena, off, kw, vl, seq, r := s.probe(key, h)
	var d, now int64
	switch {
	case r == peekMiss:
		r = e.absent(s, h, seq, counted, procStripe())
	case r == peekHit && kw>>24&flagDeadline != 0:
		d, now, r = e.liveAt(s, arena, off, kw, seq)
	}
	// Field by field: a composite literal zeroes *pk and copies it
	// whole: 41 instructions a hit under cachegrind, against 20.
	pk.r, pk.arena, pk.off, pk.val, pk.vlen = r, arena, off, valueAt(off, kw), int(vl)
	pk.kw, pk.seq, pk.deadline, pk.now = kw, seq, d, now
}

// keyTailEqual reports whether the word at p (in an arena) begins with
// tail, the last len(tail) < 8 bytes of a key.
func keyTailEqual(p unsafe.Pointer, tail string) bool {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], atomic.LoadUint64((*uint64)(p)))
	return string(b[:len(tail)]) == tail
}

// nativeWord is the word whose memory holds the 8 bytes of s in order (the
// native byte order), as the arena's words hold a key's bytes.
func nativeWord(s string) uint64 {
	return binary.NativeEndian.Uint64(unsafe.Slice(unsafe.StringData(s), 8))
}

// valid reports whether no writer ran in s since peek read its sequence
// count: what was read since is the state of that instant.
func (pk *peeked) valid(s *shard) bool { return s.mu.seq.Load() == pk.seq }

// markViewed sets flagViewed on the record probe found at off in arena,
// whose flags word was kw (see View), and reports false if a concurrent
// change of the header made it fail (the caller then reads under the
// lock). The caller validates before (so that the compare-and-swap hits a
// real header, never bytes of a stale view) and after.
func markViewed(arena []byte, off, kw uint32) bool {
	if kw>>24&flagViewed != 0 {
		return true
	}
	p := hdr64(arena, off+hdrMeta)
	m := atomic.LoadUint64(p)
	return uint32(m>>56) == kw>>24 && atomic.CompareAndSwapUint64(p, m, m|flagViewed<<56)
}

// hitAt counts a validated hit on the record at off in arena (its flags
// word kw, its sequence count seq) in stripe r (procStripe) and logs it
// for the policy, as readHit does. Only a hit the log takes reads the
// record's slot (probe does not: most hits of a calm shard are not
// logged), and it validates again after reading it, so that what it logs
// is the slot of a state the read saw whole; if a writer ran meanwhile,
// the event is dropped (the log is lossy).
func (e *Engine) hitAt(s *shard, arena []byte, off, kw uint32, seq uint64, r uint32) {
	n := e.reads.hit(r)
	if kw>>24&flagTracked != 0 && s.logsRead(n) {
		slot := uint32(atomic.LoadUint64(hdr64(arena, off+hdrMeta)))
		if s.mu.seq.Load() == seq {
			s.logAccess(slot, r)
		}
	}
}

// peekHit is hitAt for what peek found.
func (e *Engine) peekHit(s *shard, pk *peeked) {
	e.hitAt(s, pk.arena, pk.off, pk.kw, pk.seq, procStripe())
}

// rlockLive takes s.mu shared and finds key's live entry: the read path
// every read shares. On success s.mu is still held (the caller releases
// it), and now is the engine's time if the entry has a deadline, else 0: a
// read of a key without TTL does not read the clock. Otherwise s.mu has
// been released: a due entry is removed (lazy expiry, expireNow), and a
// counted read logs a missing key for the policy and counts a miss.
func (e *Engine) rlockLive(s *shard, key string, h uint64, counted bool) (en entry, now int64, ok bool) {
	s.mu.RLock()
	slot, off, ok := s.findRecordLocked(key, h)
	if !ok {
		s.mu.RUnlock()
		if counted {
			e.readMiss(s, h, procStripe())
		}
		return entry{}, 0, false
	}
	en = entry{s, slot, off} // the table's offset: no read of the slot array
	if d := en.deadline(); d != 0 {
		if now = e.now(); now >= d {
			s.mu.RUnlock()
			e.expireNow(s, key, h)
			if counted {
				e.countRead(false)
			}
			return entry{}, 0, false
		}
	}
	return en, now, true
}

// readMiss counts a read of an absent key with hash h in stripe r
// (procStripe) and logs it for the policy, sampled as hits are (see
// shard.logsRead).
func (e *Engine) readMiss(s *shard, h uint64, r uint32) {
	n := e.reads.miss(r)
	if s.logsRead(n) {
		s.logMiss(h, r)
	}
}

// readHit counts a hit on the entry at slot and, if the entry was
// tracked, logs it for the policy (sampled while the shard is calm, see
// shard.logsRead). The caller holds no lock of s.
func (e *Engine) readHit(s *shard, slot uint32, tracked bool) {
	r := procStripe()
	n := e.reads.hit(r)
	if tracked && s.logsRead(n) {
		s.logAccess(slot, r)
	}
}

func itemOf(en entry, now int64) Item {
	it := Item{Value: append([]byte{}, en.value()...), Version: en.version(), TTL: NoTTL, Pinned: en.flags()&flagPinned != 0}
	if d := en.deadline(); d != 0 {
		it.TTL = time.Duration(d - now)
	}
	return it
}

// All returns an iterator over the live entries: key and a copy of the
// value. It never yields a due entry (and removes those it passes, as any
// read does). Iteration is weakly consistent, like sync.Map's Range: it
// locks one shard at a time and yields outside the lock, so entries written
// during the iteration may or may not be seen; no key is yielded twice,
// even one deleted and written again meanwhile. It does not count hits.
func (e *Engine) All() iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		for k, it := range e.Items() {
			if !yield(k, it.Value) {
				return
			}
		}
	}
}

// Items is All with each entry's Item (version and TTL).
func (e *Engine) Items() iter.Seq2[string, Item] {
	return func(yield func(string, Item) bool) {
		type kv struct {
			k  string
			it Item
		}
		const batch = 256
		buf := make([]kv, 0, batch)
		var due []string
		// A shard is read a batch at a time, unlocked in between, when
		// a key yielded may be deleted and written again into a slot
		// not read yet. Such a key has a version above the shard's
		// when its iteration began (v0): an entry with a version at or
		// below v0 has been in its slot since then. So the hashes of
		// the keys yielded from a shard read in several batches are
		// kept, and a later entry with a version above v0 is skipped if
		// its hash is among them (a 64-bit hash of a key the seed keeps
		// secret: a collision, which would hide an entry written during
		// the iteration, as weak consistency allows, is negligible).
		var yielded map[uint64]struct{}
		for i := range e.shards {
			s := &e.shards[i]
			clear(yielded)
			var v0 uint64
			for next := 0; ; {
				buf, due = buf[:0], due[:0]
				s.mu.RLock()
				now := e.now()
				if next == 0 {
					v0 = s.version
				}
				for ; next < s.ents.len() && len(buf) < batch; next++ {
					if s.ents.get(uint32(next)) == 0 {
						continue
					}
					en := s.at(uint32(next))
					if d := en.deadline(); d != 0 && now >= d {
						due = append(due, string(en.key()))
						continue
					}
					if yielded != nil && en.version() > v0 {
						if _, dup := yielded[s.hash(en.key())]; dup {
							continue
						}
					}
					buf = append(buf, kv{string(en.key()), itemOf(en, now)})
				}
				end := next >= s.ents.len()
				if !end {
					if yielded == nil {
						yielded = make(map[uint64]struct{})
					}
					for _, p := range buf {
						yielded[e.seed.keyHash(p.k)] = struct{}{}
					}
				}
				s.mu.RUnlock()
				for _, k := range due {
					_, h := e.shardFor(k)
					e.expireNow(s, k, h)
				}
				for _, p := range buf {
					if !yield(p.k, p.it) {
						return
					}
				}
				if end {
					break
				}
			}
		}
	}
}

// expireDue is a read's end when peek found key due: the key is removed
// (lazy expiry) and the read counts a miss.
func (e *Engine) expireDue(s *shard, key string, h uint64) {
	e.expireNow(s, key, h)
	e.countRead(false)
}

// expireNow removes key if it is (still) due: lazy expiry, upgraded to the
// exclusive lock. A reader saw the entry due at its now; the now read under
// the exclusive lock is at least that.
func (e *Engine) expireNow(s *shard, key string, h uint64) {
	var op locked
	for op.lock(e, s) {
		if slot, ok := s.findLocked(key, h); ok && !s.closed {
			if d := s.at(slot).deadline(); d != 0 && op.clk.get() >= d {
				s.removeLocked(slot, h, CauseExpired, op.events())
			}
		}
		op.unlock(nil)
	}
}

// lookupLocked finds key for a writer, removing it first if it is due. It
// returns the slot and whether a live entry exists.
//
// The writer is about to use the slot's entry (s.at), so it remembers
// the slot's word (slots.remember): the record's offset, which the lookup
// has just read from the table, spares it a read of the slot array.
func (s *shard) lookupLocked(key string, h uint64, now int64, ev *[]Removal) (uint32, bool) {
	clk := fixedNow(now)
	return s.lookupAtLocked(key, h, &clk, ev)
}

// lookupAtLocked is lookupLocked reading the time from now only if the
// key has a deadline.
func (s *shard) lookupAtLocked(key string, h uint64, now *lazyNow, ev *[]Removal) (uint32, bool) {
	slot, off, ok := s.findRecordLocked(key, h)
	if !ok {
		return 0, false
	}
	s.ents.remember(slot, off+1)
	if d := (entry{s, slot, off}).deadline(); d != 0 && now.get() >= d {
		s.removeLocked(slot, h, CauseExpired, ev)
		return 0, false
	}
	return slot, true
}
