package evict

import "unsafe"

// VolatileTTL evicts the entry whose deadline is nearest, approximately,
// like Redis's volatile-ttl.
//
// Each entry's deadline is kept in a slice; Victim samples as Redis does
// (10 random entries merged into a pool of the 16 best; see sampler) and
// returns the nearest deadline. Entries without a deadline (possible only
// if the policy is used outside a volatile Spec) are evicted last. Reads do nothing.
//
// Cost: O(1) per operation except Victim, O(26); Access is free. Memory: 16
// bytes per entry.
//
// Choose it when the TTL says how long data stays useful, so that data
// about to expire anyway is the cheapest to lose.
var VolatileTTL = Spec{Name: "volatile-ttl", Volatile: true, New: newTTLPolicy}

func newTTLPolicy(int64) Policy { return newTTL() }

// ttlPolicy is the policy of VolatileTTL, whose doc describes it.
type ttlPolicy struct {
	ttlState
	_ [(64 - unsafe.Sizeof(ttlState{})%64) % 64]byte // whole lines, as lruPolicy's
}

type ttlState struct {
	s        sampler
	deadline []int64
}

// newTTL returns an empty TTL policy.
func newTTL() *ttlPolicy { return &ttlPolicy{ttlState: ttlState{s: newSampler(0x74746c)}} }

// Add implements Policy.
func (p *ttlPolicy) Add(h Handle, e Entry) {
	p.s.set.add(h)
	if int(h) >= len(p.deadline) {
		n := growLen(h, len(p.deadline))
		d := make([]int64, n)
		copy(d, p.deadline)
		p.deadline = d
	}
	p.deadline[h] = e.Deadline
}

// Update implements Policy.
func (p *ttlPolicy) Update(h Handle, e Entry) { p.Add(h, e) }

// SetDeadline implements DeadlineSetter: a moved deadline moves the entry
// in the eviction order.
func (p *ttlPolicy) SetDeadline(h Handle, deadline int64) {
	if int(h) < len(p.deadline) {
		p.deadline[h] = deadline
	}
}

// Remove implements Policy.
func (p *ttlPolicy) Remove(h Handle) {
	if p.s.set.remove(h) {
		p.s.forget(h)
	}
}

// Access implements Policy; it does nothing.
func (p *ttlPolicy) Access(Handle) {}

// Miss implements Policy; it does nothing.
func (p *ttlPolicy) Miss(uint64) {}

// Victim implements Policy.
func (p *ttlPolicy) Victim(int64) (Handle, bool) {
	return p.s.victim(func(h Handle) uint64 {
		d := p.deadline[h]
		if d <= 0 {
			return 0
		}
		return ^uint64(d) // nearer deadline, higher score
	})
}

// Len reports how many entries the policy tracks.
func (p *ttlPolicy) Len() int { return p.s.set.len() }

func (p *ttlPolicy) check() error { return p.s.check() }
