package evict

import "math"

// TinyLFU is the W-TinyLFU admission and eviction policy (Einziger, Friedman
// and Manes, "TinyLFU: A Highly Efficient Cache Admission Policy", 2017) with
// the adaptive window of Caffeine and otter.
//
// The policy has a small LRU admission window in front of a segmented-LRU
// main region (probation and protected), with a frequency sketch deciding
// which of two entries is worth keeping.
//
// Every write enters the window (the engine always stores a write). When the
// window is over its share, its least recent entry becomes a candidate for
// the main region: Victim compares the candidate's estimated frequency with
// that of the probation region's least recent entry and returns the loser,
// moving a winning candidate into probation. With no window entry (a window
// share smaller than one entry, or one the climber emptied) the candidate is
// probation's most recent entry, usually one the window moved there without
// a duel.
// A hit in probation promotes the entry to protected; protected overflow is
// demoted back to probation, ahead of entries the window moves there. The
// frequencies come from a count-min sketch of 4-bit counters over 30-bit key
// fingerprints, halved every 10×capacity increments so that old popularity
// fades. A hill climber
// samples the hit ratio every 10×capacity requests and moves capacity
// between the window and the main region (starting at 1% window): a larger
// window favours recency-skewed workloads, a smaller one frequency-skewed
// ones and scans.
//
// Concurrency: none of its own; the engine calls it under the shard's write
// lock and buffers reads for it (see the package doc). A Miss and the Add
// of the same key close together (cache-aside: a read misses, the caller
// writes the key) count as one reference in either order, since the
// engine may deliver the Miss after the Add.
//
// Cost: O(1) amortized per call: Access a sketch update and a list move,
// Miss a sketch update.
//
// Memory: 12 bytes per entry (two 24-bit list links, the key's fingerprint
// and segment in 32 bits, a 16-bit size; an entry of 64 KiB or more keeps
// its size in a map, and a shard of more than 16 million entries keeps
// some links in one), in pages of 1024 entries, plus 8 to 16 bytes of
// sketch per entry of capacity (16 counters, rounded up to a power of
// two), plus 2.5 KiB per policy that pair Misses with Adds (pairSlots):
// 29.0 bytes per entry in a shard two thirds full, measured by
// TestPolicyMemoryPerEntry. The sketch is allocated when the shard is half
// full.
//
// Choose it by default for caches: it matches or beats LRU and LFU on
// almost every workload, resists scans and one-hit wonders, and adapts
// between recency and frequency. Segment sizes are in bytes (Entry.Size);
// the capacity in entries (the sketch's reset period, the hill climber's
// sample) is the number of entries that fit shardBytes at the current
// average entry size.
var TinyLFU = Spec{Name: "tinylfu", New: newTinyLFUPolicy}

// VolatileTinyLFU is TinyLFU restricted to entries with a TTL.
var VolatileTinyLFU = Spec{Name: "volatile-tinylfu", Volatile: true, New: newTinyLFUPolicy}

func newTinyLFUPolicy(shardBytes int64) Policy { return newTinyLFU(shardBytes) }

const (
	segNone uint8 = iota
	segWindow
	segProbation
	segProtected
)

// Caffeine's constants.
const (
	percentMain          = 0.99
	percentMainProtected = 0.80
	climbRestart         = 0.05   // hit-rate change that restarts the step size
	climbStepPercent     = 0.0625 // initial step, as a fraction of the maximum
	climbStepDecay       = 0.98
	admitHashDoS         = 6 // a candidate this frequent is sometimes admitted on a tie
	transferLimit        = 1000
)

type queue struct {
	head, tail uint32 // most and least recently used; none if empty
	bytes      int64
	n          int
}

// tinyLFUPolicy is the policy of TinyLFU and VolatileTinyLFU, whose doc
// describes it.
type tinyLFUPolicy struct {
	hint      int64 // shardBytes, or <= 0 if unknown
	maximum   int64
	windowMax int64
	protMax   int64
	total     int64
	count     int
	est       int // capacity estimate in entries (sketch and sample size)

	queues // indexed by seg: window, probation, protected

	sk sketch
	// recent pairs a Miss with the Add of the same key (see pairRef):
	// fingerprints of recent Misses and Adds, by fingerprint, and which
	// of the two each was.
	recent     [pairSlots]uint32
	recentKind [pairSlots]refKind

	hits, missN int
	prevRate    float64
	step        float64
	adjust      int64
	rng         rng

	// Set by Adaptive, which chooses the configuration itself: fixed
	// turns the hill climber off and sizes the window at windowFrac of
	// the maximum; admitSeen admits a candidate referenced at least
	// twice, whatever the victim's count, and evicts a protected entry
	// whose count fell below probation's victim first.
	fixed      bool
	admitSeen  bool
	windowFrac float64
	// admitCap, if not 0, admits a candidate counted more than admitCap
	// times whatever the victim's count (see config.admitCap).
	admitCap uint32
	// group, if not nil, is told every reference (hit or write) to a
	// key, and picks the configuration; applied is the index of the one
	// this policy runs (see follow).
	group   *adaptiveGroup
	applied int
	// filled is set, in a policy with a group, by the first Add that
	// fills the cap or the first Victim, whichever comes first, which
	// then demotes the protected entries if the group's miniature caches
	// are exact (see demoteFilled). With no cap (hint <= 0) every Add
	// that grows the total reaches the maximum, so only a Victim sets it.
	filled bool
}

// newTinyLFU returns an empty W-TinyLFU policy for a shard whose cap is
// shardBytes; zero or negative means unknown (the cap is then taken to be
// the largest total size seen).
func newTinyLFU(shardBytes int64) *tinyLFUPolicy {
	p := &tinyLFUPolicy{hint: shardBytes, rng: rng{s: 0x746c6675}}
	for i := range p.q {
		p.q[i] = queue{head: none, tail: none}
	}
	if shardBytes > 0 {
		p.setMaximum(shardBytes)
	}
	return p
}

func (p *tinyLFUPolicy) setMaximum(m int64) {
	p.maximum = m
	p.windowMax = m - int64(percentMain*float64(m))
	if p.fixed {
		p.windowMax = int64(p.windowFrac * float64(m))
	}
	p.protMax = int64(percentMainProtected * float64(m-p.windowMax))
	p.step = -climbStepPercent * float64(m)
	p.adjust = 0
}

func (p *tinyLFUPolicy) move(h Handle, s uint8) {
	p.unlink(h)
	p.link(h, s)
}

// pairSlots is the size of the table with which pairRef pairs a Miss and
// an Add, indexed by the fingerprint's low bits: a reference of another
// key with the same index between the two loses the pairing, and the key
// counts twice. The engine hands a filling shard's logged reads to the
// policy every 8th write, so a Miss can come after its Add with 7 more
// writes and their Misses in between: with 64 slots the pairing failed
// often enough to count a filling shard's keys twice and cost the engine
// 0.9 points on Glimpse at 1000 entries against the policy alone (and
// gain 0.5 at 250: sim.EngineCache, 200 runs against 200 seeds of
// sim.PolicyCache, where a Miss always comes just before its Add); with
// 512, 2.5 KiB per policy, both are within 0.25.
const pairSlots = 512

// refKind says what put a fingerprint in tinyLFUPolicy.recent.
type refKind uint8

const (
	refNone refKind = iota // the entry is unused or already paired
	refMiss
	refAdd
)

// pairRef reports whether a reference of kind k to fingerprint fp (a Miss
// or an Add) completes a pair with a recent reference of the other kind to
// the same fingerprint: a cache-aside read that missed and the write that
// followed are one reference, counted once by the sketch, whichever the
// engine delivers first. Otherwise it records this one.
func (p *tinyLFUPolicy) pairRef(fp uint32, k refKind) bool {
	i := fp & (pairSlots - 1)
	if p.recent[i] == fp && p.recentKind[i] != refNone && p.recentKind[i] != k {
		p.recentKind[i] = refNone
		return true
	}
	p.recent[i], p.recentKind[i] = fp, k
	return false
}

// onAccess records a read hit on h, a handle below nodes.len(). It loads
// h's node once: its tag gives whether h is tracked, its fingerprint and
// its segment. An Adaptive shard whose miniature caches are exact ignores
// the hit (but its group sees it) until the shard is half full (see
// coldRead).
func (p *tinyLFUPolicy) onAccess(h Handle) {
	n := p.nodes.at(h)
	tag := n.tag()
	s := uint8(tag & segMask)
	if s == segNone {
		return
	}
	fp := tag >> 2
	if p.group != nil {
		if !p.group.skips(fp) {
			p.group.observe(fp, p.groupEstimate())
		}
		if p.coldRead() {
			return
		}
	}
	p.sk.increment(fp)
	p.hits++
	if s == segProbation {
		p.move(h, segProtected)
	} else {
		p.toFront(h, n, s)
	}
}

// coldRead reports whether a policy with a group ignores a read hit: its
// sketch is not allocated yet (the shard has not been half full) and its
// group's miniature caches are exact (started, for a cache of up to
// adaptiveFull entries in all). Caffeine and otter apply no read before
// the cache is half full; see Adaptive's doc for what it gained and why
// a cache whose miniature caches sample does not.
func (p *tinyLFUPolicy) coldRead() bool {
	return p.sk.blocks == 0 && p.group.exact()
}

// groupEstimate is the capacity estimate, in entries, that this shard
// gives its Adaptive group (which sizes the miniature caches and their
// sample from the first one it gets): est once the shard is half full;
// before that, once the shard holds adaptiveStartEntries (enough to
// average their sizes), the entries of that average size that fit its
// cap, so that the miniature caches fill about when the shard does; 0
// until then.
func (p *tinyLFUPolicy) groupEstimate() int {
	if p.est > 0 {
		return p.est
	}
	if p.hint <= 0 || p.count < adaptiveStartEntries {
		return 0
	}
	return p.fitEstimate()
}

// fitEstimate is the number of entries of the current average size that
// fit the shard's cap (hint), at least the number held.
func (p *tinyLFUPolicy) fitEstimate() int {
	if p.hint <= 0 || p.total <= 0 {
		return p.count
	}
	return max(p.count, int(min(p.hint/max(p.total/int64(p.count), 1), 1<<24)))
}

// maintain demotes protected overflow to probation, runs the hill climber
// and moves window overflow into probation (after the demoted entries, so
// nearer probation's head: entries that won no duel do not take the place of
// demoted ones at the victim's end).
func (p *tinyLFUPolicy) maintain() {
	if p.group != nil {
		p.follow()
	}
	if p.hint <= 0 && p.total > p.maximum {
		p.setMaximum(p.total)
	}
	for i := 0; p.q[segProtected].bytes > p.protMax && p.q[segProtected].n > 0 && i < transferLimit; i++ {
		p.move(Handle(p.q[segProtected].tail), segProbation)
	}
	p.climb()
	for i := 0; p.q[segWindow].bytes > p.windowMax && p.q[segWindow].n > 0 && i < transferLimit; i++ {
		p.move(Handle(p.q[segWindow].tail), segProbation)
	}
}

func (p *tinyLFUPolicy) climb() {
	if p.fixed {
		return
	}
	if p.maximum <= 0 || p.est <= 0 || p.total < p.maximum/2 {
		// Not evicting yet: the hit rate says nothing about the split
		// between window and main.
		p.hits, p.missN = 0, 0
	} else if n := p.hits + p.missN; n >= 10*p.est {
		rate := float64(p.hits) / float64(n)
		change := rate - p.prevRate
		amount := p.step
		if change < 0 {
			amount = -amount
		}
		if math.Abs(change) >= climbRestart {
			p.step = math.Copysign(climbStepPercent*float64(p.maximum), amount)
		} else {
			p.step = climbStepDecay * amount
		}
		p.prevRate = rate
		p.adjust = int64(amount)
		p.hits, p.missN = 0, 0
	}
	switch {
	case p.adjust > 0:
		p.increaseWindow()
	case p.adjust < 0:
		p.decreaseWindow()
	}
}

func (p *tinyLFUPolicy) increaseWindow() {
	if p.protMax == 0 {
		p.adjust = 0
		return
	}
	quota := min(p.adjust, p.protMax)
	p.protMax -= quota
	p.windowMax += quota
	for i := 0; p.q[segProtected].bytes > p.protMax && p.q[segProtected].n > 0 && i < transferLimit; i++ {
		p.move(Handle(p.q[segProtected].tail), segProbation)
	}
	for range transferLimit {
		c := p.q[segProbation].tail
		if c == none {
			c = p.q[segProtected].tail
		}
		if c == none || quota < p.sizeOf(Handle(c)) {
			break
		}
		quota -= p.sizeOf(Handle(c))
		p.move(Handle(c), segWindow)
	}
	p.protMax += quota
	p.windowMax -= quota
	p.adjust = quota
}

func (p *tinyLFUPolicy) decreaseWindow() {
	if p.windowMax <= 1 {
		p.adjust = 0
		return
	}
	quota := min(-p.adjust, max(0, p.windowMax-1))
	p.protMax += quota
	p.windowMax -= quota
	for range transferLimit {
		c := p.q[segWindow].tail
		if c == none || quota < p.sizeOf(Handle(c)) {
			break
		}
		quota -= p.sizeOf(Handle(c))
		p.move(Handle(c), segProbation)
	}
	p.protMax -= quota
	p.windowMax += quota
	p.adjust = -quota
}

// Add implements Policy.
func (p *tinyLFUPolicy) Add(h Handle, e Entry) {
	if p.tracked(h) {
		p.update(h, e)
		return
	}
	p.grow(h)
	fp := fingerprint(e.Hash)
	p.setFP(h, fp)
	p.setSize(h, e.Size)
	p.total += p.sizeOf(h)
	p.count++
	p.link(h, segWindow)
	p.missN++
	if p.group != nil && !p.filled && p.hint > 0 && p.total >= p.maximum {
		p.demoteFilled()
	}
	if p.group != nil {
		p.group.observe(fp, p.groupEstimate())
	}
	if p.total >= p.maximum/2 || p.sk.blocks > 0 {
		// Like Caffeine, start counting when the cache is half full, when
		// the average entry size is known: the capacity in entries is the
		// cap over the average size, and sizes the sketch and its reset
		// period (see sketch for why not the entries held). The sketch
		// only grows.
		p.est = p.fitEstimate()
		p.sk.setPeriod(p.est)
		p.sk.ensure(p.est)
	}
	if !p.pairRef(fp, refAdd) {
		p.sk.increment(fp)
	}
	p.maintain()
}

// Update implements Policy.
func (p *tinyLFUPolicy) Update(h Handle, e Entry) {
	if !p.tracked(h) {
		p.Add(h, e)
		return
	}
	p.update(h, e)
}

func (p *tinyLFUPolicy) update(h Handle, e Entry) {
	d := max(e.Size, 0) - p.sizeOf(h)
	p.setSize(h, e.Size)
	p.q[p.seg(h)].bytes += d
	p.total += d
	fp := fingerprint(e.Hash)
	p.setFP(h, fp)
	p.sk.increment(fp)
	if p.group != nil {
		p.group.observe(fp, p.groupEstimate())
	}
	p.onAccessOrder(h)
	p.maintain()
}

func (p *tinyLFUPolicy) onAccessOrder(h Handle) {
	n := p.nodes.at(h)
	switch s := n.seg(); s {
	case segWindow, segProtected:
		p.toFront(h, n, s)
	case segProbation:
		p.move(h, segProtected)
	}
}

// Remove implements Policy.
func (p *tinyLFUPolicy) Remove(h Handle) {
	if !p.tracked(h) {
		return
	}
	p.unlink(h)
	p.total -= p.sizeOf(h)
	p.forgetSize(h)
	p.count--
}

// Access implements Policy.
func (p *tinyLFUPolicy) Access(h Handle) {
	if int(h) < p.nodes.len() {
		p.onAccess(h)
	}
}

// Miss implements Policy.
func (p *tinyLFUPolicy) Miss(hash uint64) {
	if fp := fingerprint(hash); !p.pairRef(fp, refMiss) {
		p.sk.increment(fp)
	}
}

// Victim implements Policy.
func (p *tinyLFUPolicy) Victim(now int64) (Handle, bool) {
	if p.count == 0 {
		return 0, false
	}
	if p.group != nil && !p.filled {
		p.demoteFilled()
	}
	p.maintain()
	victim := p.q[segProbation].tail
	if victim == none {
		victim = p.q[segProtected].tail
	} else if t := p.q[segProtected].tail; p.admitSeen && t != none && p.sk.frequency(p.fp(Handle(t))) < p.sk.frequency(p.fp(Handle(victim))) {
		// Seen-twice admission: a protected entry that has gone cold (its count
		// decayed below the probation victim's) leaves first, so that a
		// new working set larger than probation is not locked out by the
		// dead protected entries of an old one.
		victim = t
	}
	w := p.q[segWindow].tail
	if victim == none {
		return Handle(w), true
	}
	if w == none {
		// No window entry (a window share smaller than one entry, or
		// emptied by the climber): probation's newest entry (usually one
		// the window moved there without a duel) duels with the victim,
		// so that admission still filters a scan.
		if c := p.q[segProbation].head; c != none && c != victim && !p.admit(p.fp(Handle(c)), p.fp(Handle(victim))) {
			return Handle(c), true
		}
		return Handle(victim), true
	}
	// The window's LRU entry duels with the main region's victim. If the
	// window is full, the coming write would push it out of the window, so
	// a winner moves to probation; otherwise it stays in the window.
	if p.admit(p.fp(Handle(w)), p.fp(Handle(victim))) || p.growTie(Handle(w), Handle(victim)) {
		if p.q[segWindow].bytes >= p.windowMax {
			p.move(Handle(w), segProbation)
		}
		return Handle(victim), true
	}
	return Handle(w), true
}

// demoteFilled moves every protected entry to probation when an Adaptive
// shard first fills its cap (or first evicts, if no Add filled it exactly
// or the cap is unknown; see Adaptive's doc), unless its group's miniature
// caches sample the keys (a cache of more than adaptiveFull entries in
// all, where Adaptive's doc has what the demotion cost): the entries a
// filling shard protected were hit while everything fit, which says
// little about which are worth keeping once it is full. They move oldest
// first, each to probation's most recent end, so they keep their order
// ahead of the entries that were never hit. It runs once per policy, a
// pass over at most the entries the Adds before it linked (spreading it
// over several calls, as maintain spreads its moves, lost 0.1 point on P3
// at 100k entries).
func (p *tinyLFUPolicy) demoteFilled() {
	p.filled = true
	if p.group.sampling() {
		return
	}
	for p.q[segProtected].n > 0 {
		p.move(Handle(p.q[segProtected].tail), segProbation)
	}
}

// growTie reports whether window entry w, which lost the frequency duel to
// main's victim, keeps its place anyway because it tied: only in an
// Adaptive policy whose miniature caches are exact, running a frequency
// rule, whose window is below its share by at least w's size (it switched
// to a larger one; a window short of its share by less than an entry is
// full: in an engine, whose entries are bytes, it always is, and ties
// there made the policy an LRU and lost 13 points on Glimpse at 250).
// Such a window grows only by duels its oldest entries win; against an old
// working set's counts a new one's keys lost them, so the grown window
// filled with neither (see Adaptive's doc).
func (p *tinyLFUPolicy) growTie(w, victim Handle) bool {
	return p.group != nil && !p.admitSeen && p.q[segWindow].bytes+p.sizeOf(w) <= p.windowMax && p.group.exact() &&
		p.sk.frequency(p.fp(w)) == p.sk.frequency(p.fp(victim))
}

func (p *tinyLFUPolicy) admit(candidate, victim uint32) bool {
	if p.admitSeen {
		return p.sk.frequency(candidate) >= 2
	}
	cf, vf := p.sk.frequency(candidate), p.sk.frequency(victim)
	if cf > vf || (p.admitCap > 0 && cf > p.admitCap) {
		return true
	}
	// Caffeine's defence against hash flooding: a frequent candidate is
	// admitted at random now and then, so an attacker cannot pin a victim.
	return cf >= admitHashDoS && p.rng.next()&127 == 0
}

// Len reports how many entries the policy tracks.
func (p *tinyLFUPolicy) Len() int { return p.count }

func (p *tinyLFUPolicy) check() error {
	n, total, err := p.checkQueues("tinylfu", segWindow, segProtected)
	if err != nil {
		return err
	}
	tagged := 0
	for h := range p.nodes.len() {
		if p.tracked(Handle(h)) {
			tagged++
		}
	}
	if n != p.count || tagged != n || total != p.total {
		return errorf("tinylfu: count %d, queued %d, tagged %d, total %d/%d", p.count, n, tagged, p.total, total)
	}
	if p.windowMax < 0 || p.protMax < 0 {
		return errorf("tinylfu: negative targets window %d protected %d", p.windowMax, p.protMax)
	}
	if p.group != nil {
		if c := p.group.configs[p.applied]; p.windowFrac != c.window || p.admitSeen != c.seen || p.admitCap != c.admitCap {
			return errorf("adaptive: runs window %.2f seen %v, want configuration %d %+v", p.windowFrac, p.admitSeen, p.applied, c)
		}
		return p.group.check()
	}
	return nil
}
