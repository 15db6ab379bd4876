package evict

// AllKeysRandom evicts a uniformly random entry.
//
// Tracked handles live in a dense array with a position index; Remove swaps
// the last handle into the hole. Victim draws an index from a splitmix64
// generator seeded with a fixed value per instance, so a run is
// reproducible. Access and Miss do nothing at all.
//
// Cost: every operation O(1); Access is free. Memory: 8 bytes per entry.
//
// Choose it when accesses are close to uniform, or when read cost matters
// more than hit ratio; on looping access patterns larger than the cache it
// beats LRU (which gets nothing), but on skewed workloads it is the worst.
var AllKeysRandom = Spec{Name: "allkeys-random", New: newRandomPolicy}

// VolatileRandom is AllKeysRandom restricted to entries with a TTL.
var VolatileRandom = Spec{Name: "volatile-random", Volatile: true, New: newRandomPolicy}

func newRandomPolicy(int64) Policy { return newRandom() }

// randomPolicy is the policy of AllKeysRandom and VolatileRandom, whose doc
// describes it.
type randomPolicy struct {
	set denseSet
	rng rng
}

// newRandom returns an empty Random policy.
func newRandom() *randomPolicy { return &randomPolicy{rng: rng{s: 0x72616e64}} }

// Add implements Policy.
func (p *randomPolicy) Add(h Handle, e Entry) { p.set.add(h) }

// Update implements Policy.
func (p *randomPolicy) Update(h Handle, e Entry) { p.set.add(h) }

// Remove implements Policy.
func (p *randomPolicy) Remove(h Handle) { p.set.remove(h) }

// Access implements Policy; it does nothing.
func (p *randomPolicy) Access(Handle) {}

// Miss implements Policy; it does nothing.
func (p *randomPolicy) Miss(uint64) {}

// Victim implements Policy.
func (p *randomPolicy) Victim(int64) (Handle, bool) {
	n := p.set.len()
	if n == 0 {
		return 0, false
	}
	return p.set.keys[p.rng.intn(n)], true
}

// Len reports how many entries the policy tracks.
func (p *randomPolicy) Len() int { return p.set.len() }

func (p *randomPolicy) check() error { return p.set.check() }
