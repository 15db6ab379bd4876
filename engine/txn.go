package engine

import (
	"fmt"
	"slices"
	"time"
)

// Precondition is a version a transaction requires: the key must exist with
// exactly Version, or, if Version is 0, must not exist. An expired or
// evicted key no longer has its old version, so a precondition on it fails.
type Precondition struct {
	Key     string
	Version uint64
}

// Op is one write of a transaction.
type Op struct {
	Key    string
	Value  []byte
	Delete bool          // remove the key instead of writing Value
	TTL    time.Duration // as SetOptions.TTL
	// KeepTTL keeps an existing key's deadline, as SetOptions.KeepTTL.
	KeepTTL bool
	Pin     bool
}

// Commit applies ops all-or-nothing if every precondition holds, and returns
// the version each op left its key with (0 for a delete):
//
//	for _, p := range pre {
//		if version(p.Key) != p.Version { return nil, false, nil }
//	}
//	for i, op := range ops { apply(op); versions[i] = version(op.Key) }
//	return versions, true, nil
//
// Commit locks every shard it touches in ascending order, so concurrent
// commits cannot deadlock. A key may appear in ops at most once
// (ErrInvalidOptions). If the writes cannot all fit under MaxBytes the
// commit fails with ErrOutOfMemory (or ErrTooLarge) and nothing changes;
// keys written by the commit are never evicted to make room for it.
func (e *Engine) Commit(pre []Precondition, ops []Op) (versions []uint64, committed bool, err error) {
	for _, p := range pre {
		if err := e.checkKey(p.Key); err != nil {
			return nil, false, err
		}
	}
	seen := make(map[string]struct{}, len(ops))
	for _, op := range ops {
		if err := e.checkKey(op.Key); err != nil {
			return nil, false, err
		}
		if op.TTL < 0 {
			return nil, false, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, op.TTL)
		}
		if op.TTL > 0 && op.KeepTTL {
			return nil, false, fmt.Errorf("%w: TTL with KeepTTL", ErrInvalidOptions)
		}
		if _, dup := seen[op.Key]; dup {
			return nil, false, fmt.Errorf("%w: key %q written twice", ErrInvalidOptions, op.Key)
		}
		seen[op.Key] = struct{}{}
	}
	if e.closed.Load() {
		return nil, false, ErrClosed
	}

	// Lock the shards in ascending order.
	idx := make([]int, 0, len(pre)+len(ops))
	hashes := make([]uint64, len(ops))
	for _, p := range pre {
		_, h := e.shardFor(p.Key)
		idx = append(idx, int(h&e.mask))
	}
	for i, op := range ops {
		_, h := e.shardFor(op.Key)
		hashes[i] = h
		idx = append(idx, int(h&e.mask))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	var ev []Removal
	evp := e.events(&ev)
	for _, i := range idx {
		e.shards[i].mu.Lock()
	}
	if len(idx) > 0 && e.shards[idx[0]].closed {
		// Close marks every shard under its own lock, so a locked shard
		// is a valid witness.
		err = ErrClosed
	} else {
		versions, committed, err = e.commitLocked(pre, ops, hashes, evp)
	}
	for _, i := range slices.Backward(idx) {
		e.shards[i].mu.Unlock()
	}
	e.deliver(ev)
	return versions, committed, err
}

func (e *Engine) commitLocked(pre []Precondition, ops []Op, hashes []uint64, ev *[]Removal) ([]uint64, bool, error) {
	now := e.now()
	for _, p := range pre {
		s, h := e.shardFor(p.Key)
		slot, ok := s.lookupLocked(p.Key, h, now, ev)
		switch {
		case !ok && p.Version != 0, ok && s.at(slot).version() != p.Version:
			return nil, false, nil
		}
	}

	// Plan: where each op lands, the deadline it leaves, and the room each
	// shard needs (the sum of the growths, so every step fits).
	type plan struct {
		s        *shard
		slot     uint32
		found    bool
		deadline int64
	}
	plans := make([]plan, len(ops))
	need := map[*shard]int64{}
	excl := map[*shard][]uint32{}
	for i, op := range ops {
		s := &e.shards[hashes[i]&e.mask]
		slot, found := s.lookupLocked(op.Key, hashes[i], now, ev)
		p := plan{s: s, slot: slot, found: found}
		if op.Delete && found {
			excl[s] = append(excl[s], slot)
		}
		if !op.Delete {
			switch {
			case op.KeepTTL && found:
				p.deadline = s.at(slot).deadline()
			case op.TTL > 0:
				d, err := deadlineAfter(now, op.TTL)
				if err != nil {
					return nil, false, err
				}
				p.deadline = d
			}
			size := int64(len(op.Key)) + int64(len(op.Value)) + EntryOverhead
			if int64(len(op.Key))+int64(len(op.Value)) > maxArena/2 || (s.maxBytes > 0 && size > s.maxBytes) {
				return nil, false, fmt.Errorf("%w: %d bytes", ErrTooLarge, size)
			}
			grow := size
			if found {
				grow -= s.at(slot).size()
				excl[s] = append(excl[s], slot)
			}
			need[s] += max(grow, 0)
		}
		plans[i] = p
	}
	resync := func() {
		for s, slots := range excl {
			for _, slot := range slots {
				if s.ents[slot] == 0 {
					continue // deleted by this commit
				}
				en := s.at(slot)
				s.syncPolicyLocked(en, 0, en.size(), false)
			}
		}
	}
	// Check every shard before evicting in any, so that a commit that
	// cannot fit evicts nothing.
	for s, n := range need {
		if err := s.checkRoomLocked(n, now, excl[s], ev); err != nil {
			resync()
			return nil, false, err
		}
	}
	for s, n := range need {
		if err := s.makeRoomLocked(n, now, excl[s], ev); err != nil {
			resync()
			return nil, false, err
		}
	}
	// Room is reserved; apply. Existing entries being written stay hidden
	// from the policy until written, so no write evicts another of ours.
	versions := make([]uint64, len(ops))
	for i, op := range ops {
		p := plans[i]
		if op.Delete {
			if p.found {
				p.s.removeLocked(p.slot, hashes[i], Deleted, ev)
			}
			continue
		}
		v, _, err := p.s.writeLocked(op.Key, hashes[i], p.slot, p.found, op.Value, p.deadline, op.Pin, now, ev)
		if err != nil {
			// Unreachable: room was made and sizes were checked.
			resync()
			return nil, false, err
		}
		versions[i] = v
	}
	return versions, true, nil
}
