package expiry

import "time"

// Reclaimer is one independently locked part of a store (an engine shard)
// that can remove its due entries.
type Reclaimer interface {
	// ReclaimDue removes at most max entries whose deadline is at or before
	// now, earliest first, and returns how many it removed and whether due
	// entries remain.
	ReclaimDue(now int64, max int) (removed int, more bool)
}

// Budget bounds the work of one active expiry cycle.
type Budget struct {
	// Count is the most entries one cycle removes. Default 1<<20.
	Count int
	// Time is the most time one cycle runs (checked between batches).
	// Default 25 ms.
	Time time.Duration
	// Batch is the most entries removed from one part while its lock is
	// held. Default 128.
	Batch int
}

func (b Budget) withDefaults() Budget {
	if b.Count <= 0 {
		b.Count = 1 << 20
	}
	if b.Time <= 0 {
		b.Time = 25 * time.Millisecond
	}
	if b.Batch <= 0 {
		b.Batch = 128
	}
	return b
}

// Cycle runs active expiry over a fixed set of parts. It remembers where the
// last cycle stopped so that a cycle cut short by its budget resumes with
// the next part, and no part starves. A Cycle is not safe for concurrent
// use: its owner serializes Run, Begin and every Pass.Step (the engine holds
// a lock around each call, and releases it between steps to report the
// removals).
type Cycle struct {
	parts  []Reclaimer
	budget Budget
	next   int
	// elapsed measures the time spent; it is a function so that tests and
	// the engine can supply their own clock. It returns nanoseconds.
	elapsed func() int64
}

// NewCycle returns a cycle over parts. elapsed is a monotonic nanosecond
// reading used only to enforce the time budget (it may be nil: then only
// the count budget applies).
func NewCycle(parts []Reclaimer, b Budget, elapsed func() int64) *Cycle {
	return &Cycle{parts: parts, budget: b.withDefaults(), elapsed: elapsed}
}

// Run removes due entries (deadline ≤ now) from every part, a batch per part
// in turn, until no part has due entries or the budget is spent. It returns
// how many entries it removed and whether due entries remain (the caller
// should run again soon). It is Begin followed by Step until Step reports
// the end.
func (c *Cycle) Run(now int64) (removed int, more bool) {
	p := c.Begin(now)
	for p.Step() {
	}
	return p.Removed(), p.More()
}

// Pass is one cycle in progress, run a batch at a time with Step, so that
// its owner can release its locks between batches (the engine reports each
// batch's removals to its listener outside every lock). Several passes of
// one Cycle may be in progress at once; each keeps its own budget and
// share the cycle's rotation, so together they still visit parts fairly.
type Pass struct {
	c       *Cycle
	now     int64
	start   int64
	pending []bool // the parts that may still have due entries
	left    int    // number of pending parts
	swept   int    // parts visited in the current sweep
	removed int
	done    bool
	more    bool
}

// Begin starts a cycle at now. Nothing is removed until Step.
func (c *Cycle) Begin(now int64) *Pass {
	p := &Pass{c: c, now: now, pending: make([]bool, len(c.parts)), left: len(c.parts)}
	for i := range p.pending {
		p.pending[i] = true
	}
	if c.elapsed != nil {
		p.start = c.elapsed()
	}
	return p
}

// Step removes one batch from the next part that may have due entries and
// reports whether the pass goes on (false: the pass is over, see More). It
// visits the parts in turn, a batch each, checks the count budget before
// each batch and the time budget after each full sweep, exactly as Run.
func (p *Pass) Step() bool {
	c := p.c
	for !p.done {
		if p.left == 0 {
			p.done = true
			break
		}
		if p.swept == len(c.parts) {
			p.swept = 0
			if c.elapsed != nil && time.Duration(c.elapsed()-p.start) >= c.budget.Time {
				p.done, p.more = true, true
				break
			}
		}
		if p.removed >= c.budget.Count {
			p.done, p.more = true, true
			break
		}
		i := c.next
		c.next = (c.next + 1) % len(c.parts)
		p.swept++
		if !p.pending[i] {
			continue
		}
		n, m := c.parts[i].ReclaimDue(p.now, min(c.budget.Batch, c.budget.Count-p.removed))
		p.removed += n
		if !m {
			p.pending[i] = false
			p.left--
		}
		return true
	}
	return false
}

// Removed returns how many entries the pass has removed so far.
func (p *Pass) Removed() int { return p.removed }

// More reports whether due entries remained when the pass ended (its budget
// ran out first).
func (p *Pass) More() bool { return p.more }
