package engine

import "slices"

// locked is the shape of every operation that changes shards: lock the
// shard(s), read the engine's time under the lock (so that the operation
// decides at one instant), do the work, recording removals in events(),
// unlock, and report the removals to the listener with no lock held, on
// the calling goroutine (see deliver):
//
//	var op locked
//	for op.lock(e, s) {
//		err = s.workLocked(..., op.now, &op.r, op.events())
//		err = op.unlock(err)
//	}
//
// A write that needs room under MaxBytes its own shards cannot make
// returns errVisit from its work, holding what it got in op.r: unlock then
// makes room in other shards with no lock held and lets the loop run
// another round (see budget). Work that needs no room ignores op.r. A
// locked is used for one operation; its zero value is ready.
type locked struct {
	e    *Engine
	s    *shard // the shard, or nil when idx lists the shards
	idx  []int  // the shards, ascending (Commit)
	now  int64
	ev   []Removal
	r    room
	done bool
}

// lock starts a round under s's exclusive lock and reports whether there
// is one to run.
func (op *locked) lock(e *Engine, s *shard) bool {
	if op.done {
		return false
	}
	op.e, op.s = e, s
	s.mu.Lock()
	op.now = e.now()
	return true
}

// lockShards is lock for the shards at idx, taken in ascending order.
func (op *locked) lockShards(e *Engine, idx []int) bool {
	if op.done {
		return false
	}
	op.e, op.idx = e, idx
	for _, i := range idx {
		e.shards[i].mu.Lock()
	}
	op.now = e.now()
	return true
}

// events returns where the work records removals: nil when no listener is
// set (so nothing is copied).
func (op *locked) events() *[]Removal { return op.e.events(&op.ev) }

// unlock ends the round the work ended with err, and returns the
// operation's error. A round that needs room (errVisit) is followed by a
// visit and, if that got the room, another round; otherwise the operation
// ends: unused room goes back to the budget and the removals to the
// listener.
func (op *locked) unlock(err error) error {
	e := op.e
	e.b.endRound(&op.r, err)
	if op.s != nil {
		op.s.mu.Unlock()
	}
	for _, i := range slices.Backward(op.idx) {
		e.shards[i].mu.Unlock()
	}
	if err == errVisit {
		if err = e.visit(&op.r, op.events()); err == nil {
			return nil
		}
	}
	op.done = true
	e.b.finish(&op.r)
	e.deliver(op.ev)
	return err
}
