package engine

import "slices"

// locked is the shape of every operation that changes shards: lock the
// shard(s), do the work, reading the engine's time under the lock at most
// once (op.clk, read at its first use: the operation decides at one
// instant, and work that needs no time reads no clock), recording removals
// in events(), unlock, and report the removals to the listener with no
// lock held, on the calling goroutine (see deliver):
//
//	var op locked
//	for op.lock(e, s) {
//		err = s.workLocked(..., &op.clk, &op.r, op.events())
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
	clk  lazyNow
	ev   []Removal
	r    room
	done bool
}

// lazyNow is the engine's time read at most once, at its first use (get),
// by an operation that holds the lock it decides under: a write with no
// TTL to a key without one, that evicts nothing, reads no clock. The zero
// value with e set is unread; fixedNow is a reading already made.
type lazyNow struct {
	e    *Engine
	t    int64
	read bool
}

func (n *lazyNow) get() int64 {
	if !n.read {
		n.t, n.read = n.e.now(), true
	}
	return n.t
}

// fixedNow is a lazyNow of the time now, already read.
func fixedNow(now int64) lazyNow { return lazyNow{t: now, read: true} }

// lock starts a round under s's exclusive lock and reports whether there
// is one to run.
func (op *locked) lock(e *Engine, s *shard) bool {
	if op.done {
		return false
	}
	op.e, op.s = e, s
	s.mu.Lock()
	op.clk = lazyNow{e: e}
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
	op.clk = lazyNow{e: e}
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
