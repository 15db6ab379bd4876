package engine

import (
	"fmt"
	"math"
	"time"
)

// Expire sets key to expire ttl from now if cond holds, and reports whether
// it did. A ttl ≤ 0 (NoTTL included: Persist removes a TTL, Delete a key)
// or one that overflows the clock is ErrInvalidTTL, and the key is left as
// it was.
func (e *Engine) Expire(key string, ttl time.Duration, cond ExpireCondition) (bool, error) {
	if cond > ExpireLT {
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
// removal's cause is Deleted).
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
	if cond > ExpireLT {
		return false, fmt.Errorf("%w: expire condition %d", ErrInvalidOptions, cond)
	}
	if e.closed.Load() {
		return false, ErrClosed
	}
	if len(key) > e.maxKey {
		return false, nil
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	now := e.now()
	d, err := deadlineAt(now)
	if err != nil {
		s.mu.Unlock()
		return false, err
	}
	done := false
	if slot, ok := s.lookupLocked(key, h, now, evp); ok {
		en := s.at(slot)
		cur := en.deadline()
		switch cond {
		case ExpireAlways:
			done = true
		case ExpireNX:
			done = cur == 0
		case ExpireXX:
			done = cur != 0
		case ExpireGT:
			done = cur != 0 && d > cur
		case ExpireLT:
			done = cur == 0 || d < cur
		}
		if done && d <= now {
			err = s.logRemoveLocked(en)
		} else if done {
			err = s.logMetaLocked(en, d, en.flags()&flagPinned != 0)
		}
		if err != nil {
			done = false
		}
		if done {
			if d <= now {
				s.removeLocked(slot, h, Deleted, evp)
				s.maybeShrinkLocked()
			} else {
				size := en.size()
				s.setDeadlineLocked(en, d)
				s.syncPolicyLocked(en, h, size, false)
			}
		}
	}
	s.mu.Unlock()
	e.deliver(ev)
	return done, err
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

// Persist removes key's TTL and reports whether it had one. With a
// durability log, a change whose record cannot be logged returns false and
// leaves the key.
func (e *Engine) Persist(key string) bool {
	if e.closed.Load() || len(key) > e.maxKey {
		return false
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	done := false
	if slot, ok := s.lookupLocked(key, h, e.now(), evp); ok {
		en := s.at(slot)
		if en.deadline() != 0 && s.logMetaLocked(en, 0, en.flags()&flagPinned != 0) == nil {
			size := en.size()
			s.setDeadlineLocked(en, 0)
			s.syncPolicyLocked(en, h, size, false)
			done = true
		}
	}
	s.mu.Unlock()
	e.deliver(ev)
	return done
}

// GetAndExpire returns key's item and sets it to expire ttl from now, in one
// step (Redis GETEX; a sliding TTL). A ttl ≤ 0 is ErrInvalidTTL.
func (e *Engine) GetAndExpire(key string, ttl time.Duration) (Item, bool, error) {
	if ttl <= 0 {
		return Item{}, false, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	if e.closed.Load() {
		return Item{}, false, ErrClosed
	}
	if len(key) > e.maxKey {
		return Item{}, false, nil
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	now := e.now()
	d, err := deadlineAfter(now, ttl)
	if err != nil {
		s.mu.Unlock()
		return Item{}, false, err
	}
	slot, ok := s.lookupLocked(key, h, now, evp)
	var it Item
	if ok {
		err = s.logMetaLocked(s.at(slot), d, s.at(slot).flags()&flagPinned != 0)
		ok = err == nil
	}
	if ok {
		en := s.at(slot)
		size := en.size()
		s.setDeadlineLocked(en, d)
		s.syncPolicyLocked(en, h, size, true)
		it = itemOf(en, now)
	}
	s.mu.Unlock()
	e.deliver(ev)
	if err != nil {
		return Item{}, false, err
	}
	if ok {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	return it, ok, nil
}

// Pin sets or clears key's exemption from eviction and reports whether the
// key exists. With a durability log, a change whose record cannot be
// logged returns false and leaves the key.
func (e *Engine) Pin(key string, pinned bool) bool {
	if e.closed.Load() || len(key) > e.maxKey {
		return false
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	slot, ok := s.lookupLocked(key, h, e.now(), evp)
	if ok && s.logMetaLocked(s.at(slot), s.at(slot).deadline(), pinned) != nil {
		ok = false
	}
	if ok {
		en := s.at(slot)
		if pinned {
			en.setFlags(en.flags() | flagPinned)
		} else {
			en.setFlags(en.flags() &^ flagPinned)
		}
		s.syncPolicyLocked(en, h, en.size(), false)
	}
	s.mu.Unlock()
	e.deliver(ev)
	return ok
}
