package engine

import (
	"math"
	"strconv"
)

// Incr adds 1 to the integer at key; see IncrBy.
func (e *Engine) Incr(key string) (int64, error) { return e.IncrWith(key, 1, IncrOptions{TTL: NoTTL}) }

// Decr subtracts 1 from the integer at key; see IncrBy.
func (e *Engine) Decr(key string) (int64, error) { return e.IncrWith(key, -1, IncrOptions{TTL: NoTTL}) }

// IncrBy adds delta to the integer at key and returns the result:
//
//	n := 0
//	if exists(key) { n = parse(value(key)) }  // else ErrNotInteger
//	n += delta                                  // else ErrOverflow
//	value(key), version(key) = format(n), next()
//	return n
//
// The value is a base-10 int64 in canonical ASCII form (Redis-compatible:
// no sign other than a leading '-', no leading zeros, no spaces, no "-0").
// A missing key counts as 0. The key's TTL is kept. On error the value is
// unchanged.
func (e *Engine) IncrBy(key string, delta int64) (int64, error) {
	return e.IncrWith(key, delta, IncrOptions{TTL: NoTTL})
}

// DecrBy subtracts delta from the integer at key; see IncrBy.
func (e *Engine) DecrBy(key string, delta int64) (int64, error) {
	if delta == math.MinInt64 {
		return 0, ErrOverflow
	}
	return e.IncrWith(key, -delta, IncrOptions{TTL: NoTTL})
}

// IncrWith is IncrBy with options: a TTL that applies only when the
// increment creates the key (so a fixed window is not extended by later
// increments), and pinning (as SetOptions.Pin).
func (e *Engine) IncrWith(key string, delta int64, o IncrOptions) (int64, error) {
	if err := e.checkKey(key); err != nil {
		return 0, err
	}
	if err := checkWriteTTL(o.TTL, false); err != nil {
		return 0, err
	}
	if e.closed.Load() {
		return 0, ErrClosed
	}
	s, h := e.shardFor(key)
	var n int64
	var err error
	var op locked
	for op.lock(e, s) {
		s.deferUpdate = true // the write's last policy call; Unlock makes it
		n, err = s.incrLocked(key, h, delta, o, op.clk.get(), &op.r, op.events())
		s.deferUpdate = false
		err = op.unlock(err)
	}
	return n, err
}

// incrLocked is IncrWith under the shard's exclusive lock.
func (s *shard) incrLocked(key string, h uint64, delta int64, o IncrOptions, now int64, r *room, ev *[]Removal) (int64, error) {
	if s.closed {
		return 0, ErrClosed
	}
	slot, found := s.lookupLocked(key, h, now, ev)
	var n int64
	var deadline int64
	if found {
		en := s.at(slot)
		v, ok := parseInt(en.value())
		if !ok {
			return 0, ErrNotInteger
		}
		n = v
		deadline = en.deadline()
	} else if o.TTL > 0 {
		d, err := deadlineAfter(now, o.TTL)
		if err != nil {
			return 0, err
		}
		deadline = d
	}
	if (delta > 0 && n > math.MaxInt64-delta) || (delta < 0 && n < math.MinInt64-delta) {
		return 0, ErrOverflow
	}
	n += delta
	var buf [20]byte
	clk := fixedNow(now)
	if _, _, err := s.writeLocked(key, h, slot, found, strconv.AppendInt(buf[:0], n, 10), deadline, o.Pin, &clk, r, ev); err != nil {
		return 0, err
	}
	return n, nil
}

// parseInt parses a canonical base-10 int64 as Redis's string2ll does.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false // leading zero, "-0", sign, space, or garbage
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // -(1<<63) wraps to MinInt64 as intended
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}
