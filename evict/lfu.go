package evict

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// AllKeysLFU evicts the least frequently used entry, approximately.
//
// It uses Redis's logarithmic (Morris) counter and time decay.
//
// Each entry has a 32-bit word holding an 8-bit counter and the 16-bit minute
// of its last decrement. A new entry starts at 5 so that it is not evicted
// before it had a chance to be read. On a read hit the counter first loses
// one per DecayTime elapsed since the last decrement, then grows by one with
// probability 1/((counter-5)·LogFactor+1), so it approximates the logarithm
// of the hit count. Access updates the word with one atomic store, skipped
// when nothing changed (the common case for hot entries, whose increments
// become rare), and never blocks; the random draw uses the goroutine-local
// runtime generator, so it is cheap but not reproducible. Time comes only
// from the now passed to Victim: the policy remembers the last one seen.
// Victim samples as Redis does (10 random entries merged into a pool of the
// 16 best; see sampler) and evicts the lowest decayed counter.
//
// Cost: all operations O(1) except Victim, O(26). Memory: 12 bytes per entry.
//
// Choose it when a stable set of popular keys should survive bursts of
// one-off keys, and the popularity changes slowly (minutes). TinyLFU usually
// has a higher hit ratio; LFU keeps Redis's semantics and knobs.
var AllKeysLFU = Spec{Name: "allkeys-lfu", New: newLFUPolicy}

// VolatileLFU is AllKeysLFU restricted to entries with a TTL.
var VolatileLFU = Spec{Name: "volatile-lfu", Volatile: true, New: newLFUPolicy}

func newLFUPolicy(int64) Policy { return newLFU(LFUConfig{}) }

// Redis defaults (lfu-log-factor 10, lfu-decay-time 1 minute, LFU_INIT_VAL 5).
const (
	lfuInitVal          = 5
	defaultLFULogFactor = 10
	defaultLFUDecay     = time.Minute
)

// LFUConfig tunes an LFU policy. The zero value is Redis's default.
type LFUConfig struct {
	// LogFactor is Redis's lfu-log-factor: the larger, the more hits it
	// takes to raise the counter (with 10, about a million hits saturate
	// it at 255). Zero means 10; negative means 0 (every hit counts).
	LogFactor int
	// DecayTime is Redis's lfu-decay-time: the counter loses one for every
	// DecayTime an entry goes unread. Zero means one minute; a negative
	// value disables decay. It is rounded to whole minutes, at least one.
	DecayTime time.Duration
	// Volatile makes Spec return a volatile-lfu Spec.
	Volatile bool
}

// Spec returns a Spec that builds LFU policies with this configuration.
func (c LFUConfig) Spec() Spec {
	name := "allkeys-lfu"
	if c.Volatile {
		name = "volatile-lfu"
	}
	return Spec{Name: name, Volatile: c.Volatile, New: func(int64) Policy { return newLFU(c) }}
}

// lfuPolicy is the policy of AllKeysLFU, VolatileLFU and LFUConfig.Spec,
// whose doc describes it.
type lfuPolicy struct {
	s       sampler
	factor  uint32
	decay   uint32 // minutes; 0 = never
	minutes atomic.Uint32
	meta    []atomic.Uint32 // counter | ldt<<8
}

// newLFU returns an empty LFU policy.
func newLFU(c LFUConfig) *lfuPolicy {
	p := &lfuPolicy{s: newSampler(0x6c6675)}
	switch {
	case c.LogFactor == 0:
		p.factor = defaultLFULogFactor
	case c.LogFactor > 0:
		p.factor = uint32(min(c.LogFactor, 1<<20))
	}
	switch {
	case c.DecayTime == 0:
		p.decay = uint32(defaultLFUDecay / time.Minute)
	case c.DecayTime > 0:
		p.decay = uint32(max(1, min(c.DecayTime/time.Minute, 1<<15)))
	}
	return p
}

func lfuPack(counter, ldt uint32) uint32 { return counter | (ldt&0xffff)<<8 }

// decayed returns the counter of word w after decay at minute now.
func (p *lfuPolicy) decayed(w, now uint32) uint32 {
	c := w & 0xff
	if p.decay == 0 {
		return c
	}
	elapsed := (now - w>>8) & 0xffff
	periods := elapsed / p.decay
	if periods >= c {
		return 0
	}
	return c - periods
}

// Add implements Policy; for a handle already tracked it is Update.
func (p *lfuPolicy) Add(h Handle, e Entry) {
	if !p.s.set.add(h) {
		p.Access(h)
		return
	}
	if int(h) >= len(p.meta) {
		n := growLen(h, len(p.meta))
		s := make([]atomic.Uint32, n)
		for i := range p.meta {
			s[i].Store(p.meta[i].Load())
		}
		p.meta = s
	}
	p.meta[h].Store(lfuPack(lfuInitVal, p.minutes.Load()))
}

// Update implements Policy; a write counts as an access.
func (p *lfuPolicy) Update(h Handle, e Entry) {
	if !p.s.set.has(h) {
		p.Add(h, e)
		return
	}
	p.Access(h)
}

// Remove implements Policy.
func (p *lfuPolicy) Remove(h Handle) {
	if p.s.set.remove(h) {
		p.s.forget(h)
	}
}

// Access implements Policy. It is safe for concurrent use and never blocks.
func (p *lfuPolicy) Access(h Handle) {
	if int(h) >= len(p.meta) {
		return
	}
	now := p.minutes.Load() & 0xffff
	w := p.meta[h].Load()
	c := p.decayed(w, now)
	if c < 255 {
		base := uint32(0)
		if c > lfuInitVal {
			base = c - lfuInitVal
		}
		if base == 0 || p.factor == 0 || rand.Uint32N(base*p.factor+1) == 0 {
			c++
		}
	}
	// Like Redis, every read refreshes the decrement time; the store is
	// skipped when neither the counter nor the minute changed.
	if nw := lfuPack(c, now); nw != w {
		p.meta[h].Store(nw)
	}
}

// Miss implements Policy; LFU ignores misses.
func (p *lfuPolicy) Miss(uint64) {}

// Victim implements Policy.
func (p *lfuPolicy) Victim(now int64) (Handle, bool) {
	m := uint32(0)
	if now > 0 {
		m = uint32(now / int64(time.Minute))
	}
	p.minutes.Store(m)
	m &= 0xffff
	return p.s.victim(func(h Handle) uint64 {
		return uint64(255 - p.decayed(p.meta[h].Load(), m))
	})
}

// Len reports how many entries the policy tracks.
func (p *lfuPolicy) Len() int { return p.s.set.len() }

func (p *lfuPolicy) check() error { return p.s.check() }
