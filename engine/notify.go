package engine

import (
	"slices"
	"time"
)

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

// events returns buf, or nil when no listener is set.
func (e *Engine) events(buf *[]Removal) *[]Removal {
	if e.onRemove == nil {
		return nil
	}
	return buf
}

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

// deliver calls the listener outside every lock, on the calling
// goroutine. The operation has completed and the engine is consistent
// before the listener runs, so a listener that panics cannot corrupt it: the
// panic propagates to the caller and the removals after it in the same
// operation are not reported.
func (e *Engine) deliver(ev []Removal) {
	for i := range ev {
		e.onRemove(ev[i])
	}
}

// deliverBackground is deliver for the expiry goroutine: a listener panic
// is recovered and counted (Stats.ListenerPanics) instead of crashing the
// process, and the remaining removals are still reported. Once Close has
// begun it starts no listener call (Close does not wait for one that is
// running; see Close).
func (e *Engine) deliverBackground(ev []Removal) {
	for i := range ev {
		e.loopMu.Lock()
		if e.closed.Load() {
			e.loopMu.Unlock()
			return
		}
		e.loopState = loopStateListening
		e.loopMu.Unlock()
		e.loopCond.Broadcast()
		func() {
			defer func() {
				if recover() != nil {
					e.listenerPanics.Add(1)
				}
				e.setLoopState(loopStateRunning)
			}()
			e.onRemove(ev[i])
		}()
	}
}

// RunExpiryCycle runs one active expiry cycle now: it removes due entries in
// deadline order within the configured budget, and reports how many it
// removed and whether due entries remain. The background goroutine runs
// the same cycle every ExpiryInterval (and again at once while entries
// remain); tests with a manual clock call it by hand.
//
// Removals are reported to Config.OnRemove on the calling goroutine after
// each batch, with no engine lock held (a listener may call
// RunExpiryCycle; a listener that blocks delays no other caller). A
// listener's panic reaches the caller; the removals of the rest of the
// cycle then wait for the next cycle.
func (e *Engine) RunExpiryCycle() (removed int, more bool) {
	return e.runExpiry(e.deliver)
}

// runExpiry runs one cycle a batch at a time, holding cycleMu for each
// batch and reporting the batch's removals with deliver after releasing
// it. The delivery mode is the caller's: deliver for a caller's goroutine,
// deliverBackground for the expiry goroutine.
func (e *Engine) runExpiry(deliver func([]Removal)) (removed int, more bool) {
	if e.closed.Load() {
		return 0, false
	}
	e.cycleMu.Lock()
	p := e.cycle.Begin(e.now())
	e.cycleMu.Unlock()
	for !e.closed.Load() {
		e.cycleMu.Lock()
		ok := p.Step()
		ev := e.cycleEv
		e.cycleEv = nil
		e.cycleMu.Unlock()
		deliver(ev)
		if !ok {
			return p.Removed(), p.More()
		}
	}
	return p.Removed(), false
}

// expireLoop is the expiry goroutine: it runs a cycle every interval (and
// again at once while due entries remain) and reports removals with
// deliverBackground. It owns nothing Close must wait for while it runs a
// listener; see Close.
func (e *Engine) expireLoop(every time.Duration) {
	defer e.setLoopState(loopStateExited)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case <-t.C:
		}
		for {
			if _, more := e.runExpiry(e.deliverBackground); !more {
				break
			}
			select {
			case <-e.done:
				return
			default:
			}
		}
	}
}

func (e *Engine) setLoopState(st loopState) {
	e.loopMu.Lock()
	e.loopState = st
	e.loopMu.Unlock()
	e.loopCond.Broadcast()
}

type reclaimer struct {
	e *Engine
	s *shard
}

// ReclaimDue runs under cycleMu (within a Pass.Step): the removals go to
// cycleEv, which runExpiry reports once cycleMu is released.
func (r reclaimer) ReclaimDue(now int64, max int) (int, bool) {
	return r.s.reclaimDue(now, max, r.e.events(&r.e.cycleEv))
}
