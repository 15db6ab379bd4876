package engine

import (
	"time"
)

// events returns buf, or nil when no listener is set.
func (e *Engine) events(buf *[]Removal) *[]Removal {
	if e.onRemove == nil {
		return nil
	}
	return buf
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
