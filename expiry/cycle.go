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
// use; the engine runs it from one goroutine (or a test drives it by hand).
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
// should run again soon).
func (c *Cycle) Run(now int64) (removed int, more bool) {
	if len(c.parts) == 0 {
		return 0, false
	}
	var start int64
	if c.elapsed != nil {
		start = c.elapsed()
	}
	pending := make([]bool, len(c.parts))
	for i := range pending {
		pending[i] = true
	}
	left := len(c.parts)
	for left > 0 {
		for range c.parts {
			if removed >= c.budget.Count {
				return removed, true
			}
			i := c.next
			c.next = (c.next + 1) % len(c.parts)
			if !pending[i] {
				continue
			}
			n, m := c.parts[i].ReclaimDue(now, min(c.budget.Batch, c.budget.Count-removed))
			removed += n
			if !m {
				pending[i] = false
				left--
			}
		}
		if left > 0 && c.elapsed != nil && time.Duration(c.elapsed()-start) >= c.budget.Time {
			return removed, true
		}
	}
	return removed, false
}
