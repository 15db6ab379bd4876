package engine

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Precondition is a version a transaction requires: the key must exist with
// exactly Version, or, if Version is MustBeAbsent, must not exist. An expired or
// evicted key no longer has its old version, so a precondition on it fails.
type Precondition struct {
	Key     string
	Version uint64
}

// Op is one write of a transaction: SetWith(Key, Value, options), or a
// delete of Key. Its option fields mean what SetOptions' do.
type Op struct {
	Key    string
	Value  []byte
	Delete bool // remove the key instead of writing Value
	// TTL, KeepTTL and TTLOnCreate are as in SetOptions (see "Contract" in
	// the package doc); a Delete ignores them.
	TTL         time.Duration
	KeepTTL     bool
	TTLOnCreate bool
	// Only and IfVersion are the op's condition, as in SetOptions; they
	// apply to a Delete too (ConditionIfPresent, or a version to compare).
	// If an op's condition does not hold, the commit does not happen, as
	// when a Precondition fails.
	Only      Condition
	IfVersion uint64
	// Pin is as SetOptions.Pin; a Delete ignores it.
	Pin bool
	// Sync, on any op of a commit, makes Commit return only once the
	// commit's record is durable (fsynced), whatever Durability.Sync says:
	// for a write that must survive an OS crash under SyncEverySecond or
	// SyncNo, such as a lease's fencing counter. It costs one fsync (shared
	// with concurrent writers); without a log it does nothing.
	Sync bool
}

// options returns op's write options.
func (op *Op) options() SetOptions {
	o := SetOptions{TTL: op.TTL, KeepTTL: op.KeepTTL, TTLOnCreate: op.TTLOnCreate, Only: op.Only, IfVersion: op.IfVersion, Pin: op.Pin}
	if op.Delete {
		// Only the condition applies to a delete.
		o = SetOptions{TTL: NoTTL, Only: op.Only, IfVersion: op.IfVersion}
	}
	return o
}

// Commit applies ops all-or-nothing if every precondition holds, and returns
// the version each op left its key with (0 for a delete):
//
//	for _, p := range pre {
//		if version(p.Key) != p.Version { return nil, false, nil }
//	}
//	for _, op := range ops {
//		if !holds(op.Only, op.IfVersion) { return nil, false, nil }
//	}
//	for i, op := range ops { apply(op); versions[i] = version(op.Key) }
//	return versions, true, nil
//
// Commit locks every shard it touches in ascending order, so concurrent
// commits cannot deadlock. A key may appear in ops at most once
// (ErrInvalidOptions). A commit needs room under MaxBytes for its net
// change only (what its writes add minus what its deletes and shrinks
// free) and evicts no more than that; if it cannot fit, it fails with
// ErrOutOfMemory (or ErrTooLarge) and nothing changes. Keys written or
// deleted by the commit, and the keys its preconditions require, are
// never evicted to make room for it. When its
// own shards cannot make the room, it unlocks them, makes room in other
// shards one at a time, and starts over (see budget).
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
		if err := op.options().check(); err != nil {
			return nil, false, err
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
	var op locked
	for op.lockShards(e, idx) {
		if len(idx) > 0 && e.shards[idx[0]].closed {
			// Close marks every shard under its own lock, so a locked
			// shard is a valid witness.
			err = ErrClosed
		} else {
			versions, committed, err = e.commitLocked(pre, ops, hashes, idx, op.clk.get(), &op.r, op.events())
		}
		err = op.unlock(err)
	}
	return versions, committed, err
}

// commitLocked is Commit with its shards locked (locked: their indexes,
// ascending; those of the preconditions' keys and of the ops'), deciding
// at now; hashes are the ops' keys' hashes.
func (e *Engine) commitLocked(pre []Precondition, ops []Op, hashes []uint64, locked []int, now int64, r *room, ev *[]Removal) ([]uint64, bool, error) {
	// excl lists, per shard, the entries making room must not evict: those
	// the ops write or delete, and those the preconditions require (the
	// commit must not evict what it depends on: its writes would then
	// appear with a precondition that no longer holds).
	excl := map[*shard][]uint32{}
	for _, p := range pre {
		s, h := e.shardFor(p.Key)
		slot, ok := s.lookupLocked(p.Key, h, now, ev)
		switch {
		case !ok && p.Version != MustBeAbsent, ok && s.at(slot).version() != p.Version:
			return nil, false, nil
		}
		if ok {
			excl[s] = append(excl[s], slot)
		}
	}

	// Plan: where each op lands, the deadline it leaves, and how much it
	// changes the accounted bytes (a delete's growth is minus its size).
	type plan struct {
		s        *shard
		slot     uint32
		found    bool
		deadline int64
		grow     int64
	}
	plans := make([]plan, len(ops))
	arena := map[*shard]int64{} // record bytes each shard's arena gains at most
	var net int64
	for i := range ops {
		s := &e.shards[hashes[i]&e.mask]
		slot, found := s.lookupLocked(ops[i].Key, hashes[i], now, ev)
		if !ops[i].options().holds(s, slot, found) {
			return nil, false, nil
		}
		plans[i] = plan{s: s, slot: slot, found: found}
	}
	for i, op := range ops {
		p := plans[i]
		s, slot, found := p.s, p.slot, p.found
		if found {
			excl[s] = append(excl[s], slot)
		}
		if op.Delete {
			if found {
				p.grow = -s.at(slot).size()
			}
		} else {
			clk := fixedNow(now)
			d, err := op.options().deadline(s, slot, found, &clk)
			if err != nil {
				return nil, false, err
			}
			p.deadline = d
			if err := e.b.checkSize(len(op.Key), len(op.Value)); err != nil {
				return nil, false, err
			}
			p.grow = int64(len(op.Key)) + int64(len(op.Value)) + EntryOverhead
			if found {
				p.grow -= s.at(slot).size()
			}
			arena[s] += int64(recSize(len(op.Key), len(op.Value), flagDeadline)) // at most
		}
		net += p.grow
		plans[i] = p
	}
	// A key both required and written (or required twice) is listed
	// once: making room hides each entry once and shows it to its policy
	// again once (a second showing would count its bytes twice).
	for s, slots := range excl {
		slices.Sort(slots)
		excl[s] = slices.Compact(slots)
	}
	for s, n := range arena {
		if err := s.arenaRoomLocked(n); err != nil {
			return nil, false, err
		}
	}
	resync := func() {
		for s, slots := range excl {
			for _, slot := range slots {
				if s.ents.get(slot) == 0 {
					continue // deleted by this commit
				}
				en := s.at(slot)
				s.syncPolicyLocked(en, 0, en.size(), false)
			}
		}
	}
	// The commit needs room for its net growth only: it applies its
	// deletes first and its shrinks before its growths, and keeps what
	// they free (shard retaining), so every step fits in what it holds.
	// Making room evicts nothing unless the whole commit can fit.
	if e.b != nil && net > 0 && !e.b.has(r, net) {
		parts := make([]roomPart, 0, len(excl)+1)
		for _, i := range locked {
			s := &e.shards[i]
			parts = append(parts, roomPart{s, excl[s]})
		}
		if err := e.b.reserveLocked(r, net, now, parts, ev); err != nil {
			resync()
			return nil, false, err
		}
	}
	// Room is held; apply, smallest growth (deletes) first. Existing
	// entries being written stay hidden from the policy until written.
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(plans[a].grow, plans[b].grow) })
	if err := e.logCommitLocked(ops, hashes, order, func(i int) (*shard, uint32, bool, int64) {
		p := plans[i]
		return p.s, p.slot, p.found, p.deadline
	}); err != nil {
		resync()
		return nil, false, err
	}
	versions := make([]uint64, len(ops))
	for _, p := range plans {
		p.s.midCommit = true
	}
	for _, i := range order {
		op, p := ops[i], plans[i]
		if op.Delete {
			if p.found {
				p.s.retaining = e.b != nil
				p.s.removeLocked(p.slot, hashes[i], CauseDeleted, ev)
				p.s.retaining = false
				p.s.keepLocked(r)
			}
			continue
		}
		versions[i] = p.s.applyWriteLocked(op.Key, hashes[i], p.slot, p.found, op.Value, p.deadline, op.Pin, ev)
		if e.b != nil {
			r.held -= p.grow
		}
	}
	for _, p := range plans {
		p.s.midCommit = false
	}
	// The entries making room hid from their policies that the commit did
	// not write (those its preconditions require) go back to them; the
	// written ones are tracked again already, the deleted ones gone.
	resync()
	for s := range excl {
		s.maybeShrinkLocked()
	}
	return versions, true, nil
}

// lockedShards returns the indexes of the shards of the keys with the
// given hashes, ascending, once each.
func lockedShards(e *Engine, hashes []uint64) []int {
	idx := make([]int, len(hashes))
	for i, h := range hashes {
		idx[i] = int(h & e.mask)
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}
