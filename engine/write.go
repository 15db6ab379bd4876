package engine

import (
	"fmt"
	"time"

	"github.com/tidekv/tide/internal/table"
)

// Set stores value under key with no TTL (clearing any TTL the key had) and
// returns the new version.
func (e *Engine) Set(key string, value []byte) (version uint64, err error) {
	version, _, err = e.SetWith(key, value, SetOptions{TTL: NoTTL})
	return version, err
}

// SetTTL stores value under key, expiring ttl from now. A ttl ≤ 0 is
// ErrInvalidTTL.
func (e *Engine) SetTTL(key string, value []byte, ttl time.Duration) (version uint64, err error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	version, _, err = e.SetWith(key, value, SetOptions{TTL: ttl})
	return version, err
}

// SetWith stores value under key as modified by o. It returns the new
// version and true, or false if o's condition (Only, IfVersion) did not
// hold, in which case nothing changed. Errors: ErrKeyTooLarge,
// ErrInvalidTTL, ErrInvalidOptions, ErrTooLarge, ErrOutOfMemory, ErrClosed;
// on error nothing changed.
func (e *Engine) SetWith(key string, value []byte, o SetOptions) (version uint64, ok bool, err error) {
	if err := e.checkKey(key); err != nil {
		return 0, false, err
	}
	if err := o.check(); err != nil {
		return 0, false, err
	}
	if e.closed.Load() {
		return 0, false, ErrClosed
	}
	s, h := e.shardFor(key)
	var op locked
	for op.lock(e, s) {
		s.deferUpdate = true // the write's last policy call; Unlock makes it
		version, ok, err = s.setLocked(key, h, value, o, &op.clk, &op.r, op.events())
		s.deferUpdate = false
		err = op.unlock(err)
	}
	return version, ok, err
}

// checkWriteTTL applies the rule of "Contract" (package doc) to the
// TTL of a write; keep reports a write that keeps the key's TTL (KeepTTL
// without TTLOnCreate), whose TTL must be left 0.
func checkWriteTTL(ttl time.Duration, keep bool) error {
	switch {
	case keep && ttl != 0:
		return fmt.Errorf("%w: TTL %v with KeepTTL", ErrInvalidOptions, ttl)
	case keep, ttl > 0, ttl == NoTTL:
		return nil
	}
	return fmt.Errorf("%w: %v (want > 0, or NoTTL for no expiry)", ErrInvalidTTL, ttl)
}

// setLocked is SetWith under the shard's exclusive lock.
func (s *shard) setLocked(key string, h uint64, value []byte, o SetOptions, now *lazyNow, r *room, ev *[]Removal) (uint64, bool, error) {
	if s.closed {
		return 0, false, ErrClosed
	}
	slot, found := s.lookupAtLocked(key, h, now, ev)
	if !o.holds(s, slot, found) {
		return 0, false, nil
	}
	deadline, err := o.deadline(s, slot, found, now)
	if err != nil {
		return 0, false, err
	}
	return s.writeLocked(key, h, slot, found, value, deadline, o.Pin, now, r, ev)
}

// check applies the rules of "Contract" (package doc) to o: its TTL
// arguments, and a condition that can hold.
func (o SetOptions) check() error {
	if err := checkWriteTTL(o.TTL, o.KeepTTL && !o.TTLOnCreate); err != nil {
		return err
	}
	if o.Only > ConditionIfPresent || (o.IfVersion != AnyVersion && o.Only == ConditionIfAbsent) {
		return fmt.Errorf("%w: condition %d with IfVersion %d", ErrInvalidOptions, o.Only, o.IfVersion)
	}
	return nil
}

// holds reports whether o's condition (Only, IfVersion) holds for the
// key at slot, live if found. s.mu must be held.
func (o SetOptions) holds(s *shard, slot uint32, found bool) bool {
	switch {
	case o.Only == ConditionIfAbsent && found, o.Only == ConditionIfPresent && !found:
		return false
	case o.IfVersion != AnyVersion && (!found || s.at(slot).version() != o.IfVersion):
		return false
	}
	return true
}

// deadline returns the deadline a write with o leaves the key at slot
// (live if found) with, at now: 0 for none. s.mu must be held.
func (o SetOptions) deadline(s *shard, slot uint32, found bool, now *lazyNow) (int64, error) {
	switch {
	case found && (o.KeepTTL || o.TTLOnCreate):
		return s.at(slot).deadline(), nil
	case o.TTL > 0:
		return deadlineAfter(now.get(), o.TTL)
	}
	return 0, nil
}

// writeLocked stores value under key (at slot if found) with the given
// deadline, first making r hold the bytes the write adds under the cap. On
// error nothing changed (but room made may be held in r).
func (s *shard) writeLocked(key string, h uint64, slot uint32, found bool, value []byte, deadline int64, pin bool, now *lazyNow, r *room, ev *[]Removal) (uint64, bool, error) {
	newSize := int64(len(key)) + int64(len(value)) + EntryOverhead
	if err := s.b.checkSize(len(key), len(value)); err != nil {
		return 0, false, err
	}
	var oldSize int64
	if found {
		oldSize = sizeOf(s.at(slot).lengths())
	}
	if err := s.arenaRoomLocked(int64(recSize(len(key), len(value), flagDeadline))); err != nil {
		return 0, false, err
	}
	if grow := newSize - oldSize; s.b != nil && grow > 0 && !s.b.has(r, grow) {
		var excl [1]uint32
		exclude := excl[:0]
		if found {
			exclude = append(exclude, slot)
		}
		if err := s.b.reserveLocked(r, grow, now.get(), []roomPart{{s, exclude}}, ev); err != nil {
			if found {
				s.syncPolicyLocked(s.at(slot), h, oldSize, false)
			}
			return 0, false, err
		}
	}
	if s.log.dur != nil {
		if err := s.logSetLocked(key, value, deadline, pin || found && s.at(slot).flags()&flagPinned != 0); err != nil {
			if found {
				s.syncPolicyLocked(s.at(slot), h, oldSize, false)
			}
			return 0, false, err
		}
	}
	v := s.applyWriteLocked(key, h, slot, found, value, deadline, pin, ev)
	if s.b != nil {
		r.held -= newSize - oldSize
	}
	return v, true, nil
}

// applyWriteLocked stores value under key (at slot if found) with the
// given deadline, and returns the new version. The caller has checked the
// size and holds the room (see budget): the resident bytes grow by the
// entry's change in size.
func (s *shard) applyWriteLocked(key string, h uint64, slot uint32, found bool, value []byte, deadline int64, pin bool, ev *[]Removal) uint64 {
	var oldSize, oldDeadline int64
	if found {
		old := s.at(slot)
		oldSize, oldDeadline = sizeOf(old.lengths()), old.deadline()
	}
	s.version++
	s.writes++
	if found {
		en := s.at(slot)
		if ev != nil {
			*ev = append(*ev, Removal{Key: key, Value: append([]byte(nil), en.value()...), Version: en.version(), Cause: CauseReplaced})
		}
		s.replaced++
		kw, vl32 := en.lengths() // read once: each read is an atomic load
		vl := int(vl32)
		if pad8(len(value)) <= pad8(vl) && (kw>>24&flagViewed == 0 || s.views.Load().none()) &&
			(deadline == 0 || kw>>24&flagDeadline != 0) && widthFlag(int(kw&maxKeyLen), len(value)) == kw>>24&flagWide {
			// In place, a word at a time with atomic stores: an
			// optimistic reader copying the old value races with
			// nothing and discards its copy (the sequence count moved).
			// A record a View marked is overwritten only when no View
			// of the shard is in progress (see viewCounts), and loses
			// its mark. A record without a deadline word cannot take a
			// TTL in place, nor a record a value of another width
			// (widthFlag: the header's layout would change). (A View
			// that marks the record after kw was read fails its
			// validation, since this writer holds the lock, and never
			// reads the bytes in place; its mark stays, which only
			// makes a later overwrite append, or is lost to the length's
			// store.)
			kl, flags := int(kw&maxKeyLen), kw>>24
			storeValue(s.arena, valueAt(en.off, kw), value)
			if len(value) != vl { // each store is an XCHG on amd64
				en.setVlen(uint32(len(value)))
			}
			if flags&flagViewed != 0 {
				en.setFlags(flags &^ flagViewed)
			}
			s.garbage += recSize(kl, vl, flags) - recSize(kl, len(value), flags)
		} else {
			// A new record: the old one may be read in place by a View
			// in progress (flagViewed), whose bytes must not change
			// under it, is too short, or has no deadline word for a
			// TTL. It keeps the old deadline (setDeadlineLocked below
			// sets the new one), so it has the word if either has one.
			// The allocation may rebuild the arena, so take the old
			// header from wherever it is afterwards. The record is
			// complete before ents and the table point to it.
			flags := deadlineFlag(deadline, en.flags())
			off := s.allocLocked(recSize(len(key), len(value), flags))
			old := s.at(slot)
			flags = old.flags()&^flagViewed | flags
			s.writeRecordLocked(off, old.version(), old.deadline(), key, value, flags, slot)
			s.garbage += old.recLen()
			s.ents.set(slot, off+1)
			s.tab.Replace(table.Tag(h), recRef(old.off), recRef(off))
			en = s.at(slot)
		}
		en.setVersion(s.version)
		if pin {
			en.setFlags(en.flags() | flagPinned)
		}
		en = s.setDeadlineLocked(en, deadline)
		size := sizeOf(en.lengths())
		s.addBytesLocked(size - oldSize)
		// An overwrite that keeps the entry's size and deadline is only
		// an access for the policy: it counts toward the shard's calm as
		// a read hit does (a cache only overwritten is not filling), and
		// a calm shard hands the policy such overwrites of one exclusive
		// lock in calmSample (calmPick of the lock count; see readlog.go).
		same := size == oldSize && en.deadline() == oldDeadline
		if same && s.calmHits < s.live {
			s.calmHits++
		}
		accessed := !same || calmPick(s.locks, s.sample.Load())
		s.syncPolicyLocked(en, h, oldSize, accessed)
		return en.version()
	}
	flags := deadlineFlag(deadline, 0)
	off := s.allocLocked(recSize(len(key), len(value), flags))
	slot = s.newSlotLocked()
	if pin {
		flags |= flagPinned
	}
	s.writeRecordLocked(off, s.version, 0, key, value, flags, slot)
	s.ents.set(slot, off+1) // the record is complete first
	en := s.at(slot)
	en = s.setDeadlineLocked(en, deadline)
	s.insertLocked(table.Tag(h), recRef(off))
	s.live++
	s.addBytesLocked(en.size())
	s.syncPolicyLocked(en, h, 0, true)
	return en.version()
}

// writeRecordLocked writes a whole record at off, which allocLocked
// reserved for recSize(len(key), len(value), flags) bytes.
func (s *shard) writeRecordLocked(off uint32, version uint64, deadline int64, key string, value []byte, flags, slot uint32) {
	kw := putHeader(s.arena, off, version, deadline, uint32(len(value)), uint32(len(key)), flags, slot)
	copy(s.arena[keyAt(off, kw):], key)
	copy(s.arena[valueAt(off, kw):], value)
}

// CompareAndSwap stores value under key if the key's current version is old,
// keeping its TTL and pinning, and returns the new version:
//
//	if exists(key) && version(key) == old {
//		value(key), version(key) = value, next()
//		return version(key), true, nil
//	}
//	return 0, false, nil
//
// A missing or due key never matches, nor does old = MustBeAbsent. Errors
// are those of SetWith.
func (e *Engine) CompareAndSwap(key string, old uint64, value []byte) (version uint64, swapped bool, err error) {
	if old == MustBeAbsent {
		// Matches no key; the argument and closed rules still apply.
		if err := e.checkCall(key); err != nil {
			return 0, false, err
		}
		return 0, false, nil
	}
	return e.SetWith(key, value, SetOptions{IfVersion: old, KeepTTL: true})
}

// Delete removes key and reports whether it existed.
// With a durability log, a delete whose record cannot be logged returns
// false and leaves the key; DeleteWith reports the error.
func (e *Engine) Delete(key string) (deleted bool) {
	_, deleted, _ = e.remove(key, AnyVersion, false)
	return deleted
}

// CompareAndDelete removes key if its current version is version:
//
//	if exists(key) && version(key) == version {
//		delete(key)
//		return true
//	}
//	return false
//
// With a durability log, a delete whose record cannot be logged returns
// false and leaves the key; DeleteWith reports the error.
func (e *Engine) CompareAndDelete(key string, version uint64) (deleted bool) {
	if version == MustBeAbsent {
		return false
	}
	_, deleted, _ = e.remove(key, version, false)
	return deleted
}

// GetAndDelete removes key and returns the value it had (Redis GETDEL).
// With a durability log, a delete whose record cannot be logged returns
// false and leaves the key; DeleteWith reports the error.
func (e *Engine) GetAndDelete(key string) (value []byte, loaded bool) {
	value, loaded, _ = e.remove(key, AnyVersion, true)
	return value, loaded
}

// remove deletes key if it exists with version (any version for
// AnyVersion), returning its value if load. A delete whose log record
// fails returns false and the error, and leaves the key.
func (e *Engine) remove(key string, version uint64, load bool) ([]byte, bool, error) {
	if e.closed.Load() || len(key) > e.maxKey {
		return nil, false, nil
	}
	s, h := e.shardFor(key)
	var val []byte
	var ok bool
	var err error
	var op locked
	for op.lock(e, s) {
		val, ok, err = s.removeKeyLocked(key, h, version, load, &op.clk, op.events())
		op.unlock(nil)
	}
	return val, ok, err
}

// removeKeyLocked is remove under the shard's exclusive lock.
func (s *shard) removeKeyLocked(key string, h uint64, version uint64, load bool, now *lazyNow, ev *[]Removal) (val []byte, ok bool, err error) {
	if s.closed {
		return nil, false, ErrClosed // Close cleared the shard after the caller's check
	}
	slot, ok := s.lookupAtLocked(key, h, now, ev)
	if !ok || (version != AnyVersion && s.at(slot).version() != version) {
		return nil, false, nil
	}
	if err := s.logRemoveLocked(s.at(slot)); err != nil {
		return nil, false, err
	}
	if load {
		val = append([]byte{}, s.at(slot).value()...)
	}
	s.removeLocked(slot, h, CauseDeleted, ev)
	s.maybeShrinkLocked()
	return val, true, nil
}
