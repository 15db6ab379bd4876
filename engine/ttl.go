package engine

import (
	"fmt"
	"math"
	"time"
)

// Expire sets key to expire ttl from now if cond holds, and reports whether
// it did. A ttl ≤ 0 (NoTTL included: Persist removes a TTL, Delete a key)
// or one that overflows the clock is ErrInvalidTTL, and the key is left as
// it was; other errors: ErrInvalidOptions, ErrKeyTooLarge, ErrClosed, and
// ErrOutOfMemory if the key's shard has no arena room to give its record
// the word a TTL takes (see record.go).
func (e *Engine) Expire(key string, ttl time.Duration, cond ExpireCondition) (bool, error) {
	if cond > ExpireConditionLT {
		return false, fmt.Errorf("%w: expire condition %d", ErrInvalidOptions, cond)
	}
	if ttl <= 0 {
		return false, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	return e.expireAt(key, cond, func(now int64) (int64, error) {
		return deadlineAfter(now, ttl)
	})
}

// ExpireAt is Expire with an absolute deadline on the engine's clock. A
// deadline already due deletes the key (as Redis's EXPIREAT does; the
// removal's cause is CauseDeleted).
func (e *Engine) ExpireAt(key string, deadline time.Time, cond ExpireCondition) (bool, error) {
	if deadline.After(time.Unix(0, math.MaxInt64)) {
		return false, fmt.Errorf("%w: deadline %v past the clock's range", ErrInvalidTTL, deadline)
	}
	d := int64(math.MinInt64) // before 1678: long due
	if !deadline.Before(time.Unix(0, math.MinInt64)) {
		d = deadline.UnixNano()
	}
	return e.expireAt(key, cond, func(int64) (int64, error) { return d, nil })
}

// expireAt sets key's deadline to deadlineAt(now) if cond holds. now is
// read under the shard lock, so that the key's liveness and its new
// deadline are decided at one instant.
func (e *Engine) expireAt(key string, cond ExpireCondition, deadlineAt func(now int64) (int64, error)) (bool, error) {
	if cond > ExpireConditionLT {
		return false, fmt.Errorf("%w: expire condition %d", ErrInvalidOptions, cond)
	}
	if err := e.checkCall(key); err != nil {
		return false, err
	}
	s, h := e.shardFor(key)
	var done bool
	var err error
	var op locked
	for op.lock(e, s) {
		var d int64
		if s.closed {
			err = ErrClosed // Close cleared the shard after checkCall
		} else if d, err = deadlineAt(op.clk.get()); err == nil {
			done, err = s.expireLocked(key, h, cond, d, op.clk.get(), op.events())
		}
		err = op.unlock(err)
	}
	return done, err
}

// expireLocked sets key's deadline to d if cond holds, deleting the key if
// d is not after now, and reports whether it did. A change whose log
// record fails is not made.
func (s *shard) expireLocked(key string, h uint64, cond ExpireCondition, d, now int64, ev *[]Removal) (bool, error) {
	slot, ok := s.lookupLocked(key, h, now, ev)
	if !ok {
		return false, nil
	}
	en := s.at(slot)
	cur := en.deadline()
	var done bool
	switch cond {
	case ExpireConditionAlways:
		done = true
	case ExpireConditionNX:
		done = cur == 0
	case ExpireConditionXX:
		done = cur != 0
	case ExpireConditionGT:
		done = cur != 0 && d > cur
	case ExpireConditionLT:
		done = cur == 0 || d < cur
	}
	switch {
	case !done:
	case d <= now:
		if err := s.logRemoveLocked(en); err != nil {
			return false, err
		}
		s.removeLocked(slot, h, CauseDeleted, ev)
		s.maybeShrinkLocked()
	default:
		if err := s.deadlineRoomLocked(en, d); err != nil {
			return false, err
		}
		if err := s.logMetaLocked(en, d, en.flags()&flagPinned != 0); err != nil {
			return false, err
		}
		s.retimeLocked(en, h, d, false)
	}
	return done, nil
}

// retimeLocked changes only en's deadline (its version
// stays) and tells the policy; accessed counts the change as an access. It
// returns the entry, which may have moved (see setDeadlineLocked).
func (s *shard) retimeLocked(en entry, h uint64, d int64, accessed bool) entry {
	size := en.size()
	en = s.setDeadlineLocked(en, d)
	s.syncPolicyLocked(en, h, size, accessed)
	return en
}

// deadlineAfter returns now+ttl, or ErrInvalidTTL if ttl ≤ 0 or the sum
// overflows.
func deadlineAfter(now int64, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	if now > math.MaxInt64-int64(ttl) {
		return 0, fmt.Errorf("%w: %v overflows the clock", ErrInvalidTTL, ttl)
	}
	return now + int64(ttl), nil
}

// Persist removes key's TTL and reports whether it had one. An over-long
// key is ErrKeyTooLarge; with a durability log, a change whose record
// cannot be logged is not made and the error says why.
func (e *Engine) Persist(key string) (bool, error) {
	if err := e.checkCall(key); err != nil {
		return false, err
	}
	s, h := e.shardFor(key)
	var done bool
	var err error
	var op locked
	for op.lock(e, s) {
		if s.closed {
			err = ErrClosed // Close cleared the shard after checkCall
		} else if slot, ok := s.lookupAtLocked(key, h, &op.clk, op.events()); ok && s.at(slot).deadline() != 0 {
			en := s.at(slot)
			if err = s.logMetaLocked(en, 0, en.flags()&flagPinned != 0); err == nil {
				s.retimeLocked(en, h, 0, false)
				done = true
			}
		}
		err = op.unlock(err)
	}
	return done, err
}

// GetAndExpire returns key's item and sets it to expire ttl from now, in one
// step (Redis GETEX; a sliding TTL). A ttl ≤ 0 is ErrInvalidTTL; a key
// whose shard has no arena room for the TTL's word is ErrOutOfMemory (as in
// Expire). On error the key is left as it was.
func (e *Engine) GetAndExpire(key string, ttl time.Duration) (Item, bool, error) {
	if ttl <= 0 {
		return Item{}, false, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	if err := e.checkCall(key); err != nil {
		return Item{}, false, err
	}
	s, h := e.shardFor(key)
	var it Item
	var ok bool
	var err error
	var op locked
	for op.lock(e, s) {
		var d int64
		if s.closed {
			err = ErrClosed // Close cleared the shard after checkCall
		} else if d, err = deadlineAfter(op.clk.get(), ttl); err == nil {
			var slot uint32
			if slot, ok = s.lookupAtLocked(key, h, &op.clk, op.events()); ok {
				en := s.at(slot)
				if err = s.deadlineRoomLocked(en, d); err != nil {
					ok = false
				} else if err = s.logMetaLocked(en, d, en.flags()&flagPinned != 0); err != nil {
					ok = false
				} else {
					en = s.retimeLocked(en, h, d, true)
					it = itemOf(en, op.clk.get())
				}
			}
		}
		err = op.unlock(err)
	}
	if err != nil {
		return Item{}, false, err
	}
	e.countRead(ok)
	return it, ok, nil
}

// Pin sets or clears key's exemption from eviction and reports whether the
// key exists. An over-long key is ErrKeyTooLarge; with a durability log, a
// change whose record cannot be logged is not made and the error says why.
func (e *Engine) Pin(key string, pinned bool) (bool, error) {
	if err := e.checkCall(key); err != nil {
		return false, err
	}
	s, h := e.shardFor(key)
	var ok bool
	var err error
	var op locked
	for op.lock(e, s) {
		ok, err = s.pinLocked(key, h, pinned, op.clk.get(), op.events())
		err = op.unlock(err)
	}
	return ok, err
}

// pinLocked is Pin under the shard's exclusive lock.
func (s *shard) pinLocked(key string, h uint64, pinned bool, now int64, ev *[]Removal) (bool, error) {
	if s.closed {
		return false, ErrClosed // Close cleared the shard after checkCall
	}
	slot, ok := s.lookupLocked(key, h, now, ev)
	if !ok {
		return false, nil
	}
	en := s.at(slot)
	if err := s.logMetaLocked(en, en.deadline(), pinned); err != nil {
		return false, err
	}
	if pinned {
		en.setFlags(en.flags() | flagPinned)
	} else {
		en.setFlags(en.flags() &^ flagPinned)
	}
	s.syncPolicyLocked(en, h, en.size(), false)
	return true, nil
}
