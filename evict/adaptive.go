package evict

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Adaptive is W-TinyLFU whose configuration is chosen, and re-chosen as
// the workload changes, by miniature simulation (Waldspurger et al.,
// "Cache Modeling and Optimization using Miniature Simulations", USENIX
// ATC 2017; Einziger, Eytan, Friedman and Manes, "Adaptive Software Cache
// Management", Middleware 2018, which evaluates it for W-TinyLFU). It is
// the recommended policy for caches: bench/HITRATIO.md has its hit ratios
// on real traces, alone and through the engine, beside otter's, TinyLFU's,
// S3-FIFO's and Bélády's OPT, with the rows where it still falls short.
//
// Algorithm. The resident entries are managed as by TinyLFU: an LRU
// admission window in front of a segmented-LRU main region (probation and
// protected), a count-min sketch of recent frequencies, and a duel at
// eviction between the window's oldest entry and probation's. What
// TinyLFU's hill climber tunes (the window's share) is instead picked from
// a few configurations, and so is the admission rule:
//
//   - windows of 1%, 20%, 50% and 80% of the capacity, where the
//     candidate is admitted if its frequency beats the victim's (1% is
//     TinyLFU's start: best for frequency-skewed workloads, loops and
//     scans; larger windows favour recency);
//   - a window of 1% where the victim's count is capped at
//     adaptiveCappedCount in that duel: a candidate counted three times
//     is admitted whatever the victim's count, so entries whose counts are
//     high from a past phase cannot keep a new working set out (nor can
//     an attacker pin a victim). As the start of a large cache it
//     gained up to 0.65 points on the Zipf and otter's Zipf rows, up to
//     0.5 on Scarab (−0.15 at 50k entries) and 0.3 to 1.9 on P3 at 100k,
//     200k and 400k, and lost 0.15 on P3 at 25k, 0.4 at 50k and 2 at
//     300k (P3's phases make its choices noisy; those figures predate
//     the sampled switching rules below, with which P3 at 50k and 300k
//     are above otter and within 0.5 of s3fifo); as the
//     start of a small one it lost points on the loop and small LIRS
//     traces. So a cache larger than adaptiveFull entries starts with it
//     and a smaller one (whose miniature caches are exact and switch
//     sooner) with TinyLFU's;
//   - windows of 20% and 40% where a candidate is admitted if it was
//     referenced at least twice recently, whatever the victim's count,
//     and a protected entry whose count decayed below the victim's is
//     evicted first: S3-FIFO's and 2Q's rule, best where recency
//     dominates and high counts are a negative signal (the Scarab, P3
//     and Sprite traces).
//
// When a shard of a cache of up to adaptiveFull entries in all (whose
// miniature caches are exact) first fills its cap (or first evicts, if no
// write fills it exactly, or its cap is unknown), every entry in its
// protected segment moves to probation, oldest first to probation's most
// recent end, so that they keep their order ahead of the entries never
// hit: they were protected by hits while everything fit, which says
// little about what is worth keeping once the shard is full (on traces
// that change phase, they are the first phase's), and the first duels
// then weigh them by the sketch like the others. Over bench/HITRATIO.md's
// rows (policy alone, its seeds) this gained up to 0.29 points on the
// multi1, multi2, multi3 and Sprite traces and 0.14 to 0.21 on
// Corda+loop+Corda at 500, 1000 and 2000 entries, and lost at most 0.05
// on a row (multi1 at 1500); demoting at half full lost 0.08 on multi3 at
// 500. Such a shard also applies no read hit (no promotion, no
// reordering, no count) until it is half full, as Caffeine and otter do
// (the miniature caches still see it; see coldRead): the entries then
// leave the window and probation in the order they were written, not
// that of hits taken while nothing was evicted. With the demotion this
// gained 0.08 to 0.34 points on every multi2 row and 0.02 to 0.13 on
// multi1 (the whole gap to otter on those rows was this: a model of
// otter's policy with tide's sketch matched tide without it and otter
// with it), 0.08 to 0.11 on multi3 at 1000 and 2000 (−0.08 at 1500), and
// changed no other row by more than 0.1 (policy alone; 16 to 50 seeds on
// the LIRS traces, 8 on Corda+loop+Corda, where it lost 0.08 at 1250 and
// 0.06 at 1500, one seed of 8 losing 0.4 there); without the demotion it
// lost up to 0.27 on Corda+loop+Corda and 0.16 on multi1. The miniature
// caches apply every read and do not demote. A larger cache (whose
// miniature caches sample) applies every read, as ignoring them until
// half full lost up to 0.12 points on the large Zipf rows (measured
// before the demotion), and does not demote: there the demotion changed
// P3 by at most 0.1 point at every size but 400k entries, where it lost
// 0.17 (policy alone, 8 seeds), and
// Scarab, the Zipf traces and otter's Zipf from 5k entries by at most 0.05
// but Scarab at 100k, where it lost 0.21 (3 seeds); and through the
// engine (sim.EngineCache, 16 runs) it lost 0.51 on P3 at 400k entries
// (where 5 of 16 runs fell 1 to 2.7 points below the others, against 2
// without it) and 0.43 at 50k, and changed 25k, 100k, 200k and 300k by at
// most 0.1.
//
// Each configuration runs in a miniature cache on the side: a W-TinyLFU
// over key hashes only, fed the references (hits and writes) of the keys
// whose mixed hash falls in a fixed sample, with its capacity scaled by the
// sampling rate. The shards of one engine share one set of miniature
// caches (Spec.NewShards, which the engine uses): the engine spreads keys
// over its shards by a seeded hash, so they see statistically the same
// workload, and one set fed a sample of every shard's references models
// the whole cache and picks the configuration of every shard. Caches of up
// to adaptiveFull entries in all sample every key (the miniature caches
// are then exact simulations); larger ones sample about adaptiveFull to
// adaptiveGhost keys' worth. The miniature caches are sized when the
// first shard holds adaptiveStartEntries entries (their average size and
// the shard's cap give its capacity in entries), so that they see the
// references from the start and fill about when the real cache does
// (sized when it was half full, they filled half a fill later, and on
// the large P3 and Scarab rows the real cache ran the initial
// configuration that much longer). Scoring starts when the miniature
// caches are full; every period (about one cache turnover of references)
// each score is halved and gains the period's hits.
//
// Switching costs hits (the real cache's contents were chosen by the old
// configuration), so a challenger must earn it: after adaptiveWarmup
// evaluations (the scores right after the caches fill mislead), each
// challenger accumulates its lead over the current configuration, in
// points of hit ratio, less adaptiveDrift per evaluation, and never below
// zero (a CUSUM test); it replaces the current configuration when that sum
// reaches adaptiveSwitch, or, if it has the other admission rule (a
// switch between the rules replaces most of the contents),
// adaptiveSwitchRule when the miniature caches are exact and
// adaptiveSwitchRuleSampled when they sample. A small cache's phases
// where the other rule leads are often short (a lower threshold there
// lost up to 4 points on the Glimpse and multi3 traces); a large cache's
// last long (on Scarab and P3 the seen-twice rule led by a point or more
// for twenty evaluations, which adaptiveSwitchRule never acted on: the
// sampled threshold gained 0.4 to 1.1 points on Scarab from 25k entries,
// 0.6 on P3 at 200k, 2 at 300k, and changed no Zipf row). A large lead
// thus switches in one evaluation, a lead of a point in about sixteen
// (ten to the other rule in a large cache). When the miniature caches
// sample, a challenger must also have led in the last
// adaptiveStreakSampled evaluations (on P3 a configuration often leads by
// ten points for one evaluation and trails the next). On a switch the
// real cache moves its window boundary and admission rule, and its
// contents migrate as it runs: a larger window grows by the duels its
// oldest entry wins against main's victim. When the miniature caches are
// exact, a tie in such a duel goes to the window's entry (a frequency
// rule, a window below its share: see growTie), which the window was not
// going to push out. Otherwise a new working set's keys lost every tie
// against an old one's counts and the grown window filled with neither:
// on Corda+loop+Corda at 1500 entries the loop (1011 keys) missed three
// passes after its first, against most of one with S3-FIFO; with ties
// to the window's entry it misses two (the switch to the 80% window comes
// at the end of the period in which the loop began). This gained 0.25 points
// there, 0.14 at 250 and 0.08 at 500, and changed no other row by more
// than 0.1 (policy alone, seeds 1 to 3; 32 on Glimpse, 10 to 19 on the
// multi traces; Glimpse at 750 and multi2 at 1000 lost 0.08, 0.03 over
// 32 seeds). Evicting main's victim with no duel while the window grows
// (Caffeine's rule) gained as much there but lost 0.23 on Sprite at 2000
// entries (12 seeds), where frequent main entries went, and in a large
// cache 0.86 on P3 at 100k (a switch to the 80% window, reversed two
// evaluations later, had flushed main); moving main's oldest entries into
// the grown window, as TinyLFU's climber does, lost 0.6 there and 1.3 at
// 400k. Ties to the window's entry in a large cache too changed P3 by
// −0.14 at 100k and −0.12 at 400k (at most 0.08 elsewhere) and Scarab by
// at most 0.01 (3 seeds), so a cache whose miniature caches sample keeps
// the plain duel.
//
// A miniature cache that ran a configuration all along holds the contents
// that configuration chose, which the real cache, switching to it, does
// not: part of its lead is one the real cache cannot collect (on P3 the
// real cache lost hits on switches its miniature caches scored as 20
// points ahead). So when the miniature caches sample, a switch restarts
// every other one from a copy of the new configuration's miniature cache
// (contents, sketch and score), each keeping its own configuration: a
// lead is then measured from the contents the real cache has. Beyond the
// lower sampled threshold, the streak and the restart gained 1.4 points
// on P3 at 50k entries and 0.5 at 400k (−0.3 at 100k; Scarab and the
// Zipf traces unchanged); for exact miniature caches the restart changed
// little and lost up to 0.35 on the small LIRS traces, so they do not
// restart.
//
// Unlike a hill climber, which follows one noisy hit rate's gradient and
// can only move the window (the sketch always filters), the miniature
// caches compare the candidates side by side on the same references, and
// include an admission rule that does not trust high counts.
//
// Concurrency: a policy instance has none of its own, as TinyLFU (see the
// package doc); the miniature caches shared by the shards of an engine
// have their own mutex, taken only for a sampled reference, and the
// configuration they pick is published atomically and applied by each
// shard under its own lock as it next maintains its segments.
//
// Cost: TinyLFU's, plus, once per shard at its first fill if the
// miniature caches are exact, a pass over its protected entries (at most
// the entries added before it: O(1) amortized, but one call that moves up
// to 80% of the shard's entries),
// plus, for each reference (hit or write) to a sampled
// key, a mutex and one reference in each of the 7 miniature caches (a map
// lookup and O(1) list moves, and on a miss an eviction). Caches of up to
// adaptiveFull entries sample every key: BenchmarkVictimSmall (a write
// that evicts, 2048 entries) measured about 10 times TinyLFU's time per
// write (2.6–3.7 µs against 0.2–0.4 µs on a loaded 2-core machine,
// measured with 6 miniature caches before the seventh was added).
// Larger caches sample a fraction of about adaptiveFull/entries or less
// (under 0.5% of the references at 1M entries): BenchmarkVictim (65536
// entries) measured about 2 times TinyLFU's. When they sample, a switch
// (rare: a few per million references on the large traces) also copies
// one miniature cache into the others, under the group's mutex: 0.7 to
// 1.4 ms at adaptiveGhost entries on a loaded 2-core machine (measured
// when it allocated about 1 MB of new copies; it now copies into the
// miniature caches' own buffers).
//
// Memory: TinyLFU's per shard (12 bytes per entry, 8 to 16 of sketch per
// entry of capacity), plus one set of miniature caches per engine (or per
// policy built by New): 7 × (about 40 bytes per miniature entry, map,
// sketch and buffers included), where a miniature cache holds as many
// entries as the whole cache up to adaptiveFull, then up to adaptiveGhost
// (about 1.2 MB at most), growing as the cache fills. For
// 1M entries of 16-byte keys and 64-byte values over 64 shards that is
// about 1.2 bytes per entry, of the engine's 63.4 beyond key and value
// with a 1.5× cap (bench/cmd/memory, tide-capped, 2026-12-05; a set per
// shard had cost 28 more);
// TestPolicyMemoryPerEntry measures 33.6 bytes per entry for a quarter of
// those shards against TinyLFU's 29.0.
// For a small cache the miniature caches are a large overhead: 0.5 MB
// beyond TinyLFU's at 2048 entries (240 bytes per entry), 0.65 MB at 8192,
// measured with 6 miniature caches (the seventh adds about a sixth).
//
// The zero Spec value is NoEviction; build instances with Adaptive.New
// (one policy with its own miniature caches) or Adaptive.NewShards (the
// shards of one engine, sharing one set).
var Adaptive = Spec{Name: "adaptive", New: newAdaptivePolicy, newShards: newAdaptiveShards}

func newAdaptivePolicy(shardBytes int64) Policy {
	return newAdaptive(shardBytes, newAdaptiveGroup(1, adaptiveConfigs))
}

// newAdaptiveShards builds the policies of n shards that share one set of
// miniature caches.
func newAdaptiveShards(n int, shardBytes int64) []Policy {
	g := newAdaptiveGroup(n, adaptiveConfigs)
	ps := make([]Policy, n)
	for i := range ps {
		ps[i] = newAdaptive(shardBytes, g)
	}
	return ps
}

// adaptivePolicy is the policy of Adaptive, whose doc describes it: a
// W-TinyLFU that runs the configuration its group's miniature caches pick.
type adaptivePolicy struct {
	*tinyLFUPolicy
}

const (
	// adaptiveFull is the capacity in entries up to which the miniature
	// caches see every key.
	adaptiveFull = 2048
	// adaptiveGhost is the largest miniature cache, in entries.
	adaptiveGhost = 4096
	// adaptiveDecay weighs the previous periods' hits in a score.
	adaptiveDecay = 0.5
	// adaptiveWarmup is how many evaluations after the miniature caches
	// fill only score: right after the fill, a configuration can lead for
	// a period and then fall far behind.
	adaptiveWarmup = 2
	// adaptiveDrift is the lead, as a share of the references a score
	// covers (two periods), that a challenger must exceed in an evaluation
	// to add to its evidence.
	adaptiveDrift = 0.005
	// adaptiveSwitch is the evidence (summed leads less drift, as shares)
	// with which a challenger with the current admission rule replaces the
	// current configuration.
	adaptiveSwitch = 0.08
	// adaptiveSwitchRule is the evidence a challenger with the other
	// admission rule needs when the miniature caches are exact (small
	// caches, whose phases where the other rule leads are short).
	adaptiveSwitchRule = 0.3
	// adaptiveSwitchRuleSampled is the evidence a challenger with the
	// other admission rule needs when the miniature caches sample the
	// keys (large caches, where a rule keeps its lead for a long phase:
	// on the Scarab and P3 traces the seen-twice rule led by a point or
	// more for twenty evaluations and adaptiveSwitchRule never switched).
	adaptiveSwitchRuleSampled = 0.05
	// adaptiveStreakSampled is how many evaluations in a row a challenger
	// must lead the current configuration by more than adaptiveDrift to
	// replace it when the miniature caches sample the keys: on P3 a
	// configuration often leads by ten points or more for one evaluation
	// and trails the next.
	adaptiveStreakSampled = 2
	// adaptiveStartEntries is how many entries a shard holds before its
	// average entry size sizes the miniature caches (if it is not half
	// full before).
	adaptiveStartEntries = 32
	// adaptiveCappedCount is the victim's count cap of the capped
	// configuration (see config.admitCap).
	adaptiveCappedCount = 2
	// adaptiveSalt mixes a fingerprint for the sampling decision, so that
	// the sample does not follow the sketch's or the shard's hash bits.
	adaptiveSalt = 0x61646170
)

// config is one candidate setting of the W-TinyLFU structure.
type config struct {
	window float64 // the window's share of the capacity
	seen   bool    // admit a candidate referenced twice (as S3-FIFO and 2Q do)
	// admitCap, if not 0, caps the victim's count in the frequency duel:
	// a candidate counted more than admitCap times is admitted whatever
	// the victim's count, so an entry whose count is high from a past
	// phase cannot keep out a new working set's keys.
	admitCap uint32
}

// adaptiveConfigs are the configurations the miniature caches compare.
// The first is TinyLFU's and the last the same with the victim's count
// capped at 2: the shards start with the first, or with the last if the
// miniature caches sample the keys (see miniSims.start).
var adaptiveConfigs = []config{
	{0.01, false, 0}, {0.2, false, 0}, {0.5, false, 0}, {0.8, false, 0},
	{0.2, true, 0}, {0.4, true, 0},
	{0.01, false, adaptiveCappedCount},
}

// adaptiveGroup holds the miniature caches that pick the configuration of
// the Adaptive policies of one engine's shards (or of one policy built by
// Adaptive.New). The shards of an engine see statistically the same
// workload (the engine spreads keys over them by a seeded hash), so one
// set of miniature caches, fed a sample of every shard's references
// chosen by key hash, decides for all of them. Each shard's policy runs
// under its own shard's lock; the miniature caches are guarded by mu,
// taken only for a sampled reference, and the decision is published in
// cur, which each shard applies under its own lock as it maintains its
// segments.
type adaptiveGroup struct {
	shards  int
	configs []config
	// limit: a reference to fingerprint fp is sampled iff
	// mix64(fp^adaptiveSalt)>>32 < limit; 0 until the miniature caches
	// start. Written under mu, read without it.
	limit atomic.Uint64
	// cur is the index of the configuration the shards are to run.
	// Written under mu, read without it.
	cur atomic.Int32

	// mu and sims, written at every sampled reference of any shard, start
	// a line after the fields above, which every reference of every shard
	// reads (limit in skips, cur in follow).
	_    [64]byte
	mu   sync.Mutex // guards sims
	sims miniSims
}

func newAdaptiveGroup(shards int, configs []config) *adaptiveGroup {
	return &adaptiveGroup{shards: max(shards, 1), configs: configs, sims: miniSims{configs: configs}}
}

// observe feeds a reference to the key of fingerprint fp, made in a shard
// whose capacity is estimated at est entries (0 if not yet known, see
// groupEstimate), to the miniature caches if the key is sampled.
func (g *adaptiveGroup) observe(fp uint32, est int) {
	if g.limit.Load() == 0 {
		if est <= 0 {
			return
		}
		g.mu.Lock()
		if !g.sims.ready {
			// The shards are alike: the engine's capacity is about
			// shards times this one's.
			g.sims.start(int(min(int64(est)*int64(g.shards), 1<<40)))
			g.cur.Store(int32(g.sims.cur))
			g.limit.Store(g.sims.limit)
		}
		g.mu.Unlock()
	}
	if g.skips(fp) {
		return
	}
	g.mu.Lock()
	if best := g.sims.observe(fp); best >= 0 {
		g.cur.Store(int32(best))
	}
	g.mu.Unlock()
}

// skips reports whether observe would skip a reference to fingerprint
// fp (the miniature caches have started and do not sample it): most
// references, tested inline by the policy's Access before the call.
func (g *adaptiveGroup) skips(fp uint32) bool {
	lim := g.limit.Load()
	return lim != 0 && mix64(uint64(fp)^adaptiveSalt)>>32 >= lim
}

// exact reports whether the miniature caches have started and see every
// key (the cache they model holds at most adaptiveFull entries).
func (g *adaptiveGroup) exact() bool {
	return g.limit.Load() >= 1<<32
}

// sampling reports whether the miniature caches have started and sample
// the keys (the cache they model holds more than adaptiveFull entries).
func (g *adaptiveGroup) sampling() bool {
	lim := g.limit.Load()
	return lim != 0 && lim < 1<<32
}

// miniSims are the miniature caches of an adaptiveGroup.
type miniSims struct {
	configs []config
	sims    []miniSim
	cur     int    // index of the configuration the shards run
	limit   uint64 // a hash is sampled iff its mixed top 32 bits are < limit
	full    bool   // the miniature caches have filled: scoring has begun
	evals   int    // evaluations since the miniature caches filled
	refs    int    // sampled references this period
	period  int
	ready   bool
	sampled bool // the miniature caches sample the keys (not exact)
}

// miniSim is one miniature cache: a W-TinyLFU over hashes, in entries.
type miniSim struct {
	p        *tinyLFUPolicy
	m        map[uint32]Handle // by fingerprint
	free     []Handle
	cap      int
	hits     int
	score    float64
	evidence float64 // summed leads over the current configuration, less drift
	streak   int     // evaluations in a row it led by more than adaptiveDrift
}

func newAdaptive(shardBytes int64, g *adaptiveGroup) *adaptivePolicy {
	p := newTinyLFU(-1)
	p.hint = shardBytes
	p.fixed = true
	p.group = g
	p.applied = int(g.cur.Load())
	p.applyConfig(g.configs[p.applied])
	if shardBytes > 0 {
		p.setMaximum(shardBytes)
	}
	return &adaptivePolicy{tinyLFUPolicy: p}
}

// applyConfig makes c the real cache's configuration; maintain moves the
// entries over the new boundaries (a larger window fills with new writes).
func (p *tinyLFUPolicy) applyConfig(c config) {
	p.windowFrac, p.admitSeen, p.admitCap = c.window, c.seen, c.admitCap
	if p.maximum > 0 {
		p.setMaximum(p.maximum)
	}
}

// follow applies the group's current configuration if the shard does not
// run it yet.
func (p *tinyLFUPolicy) follow() {
	if c := int(p.group.cur.Load()); c != p.applied {
		p.applied = c
		p.applyConfig(p.group.configs[c])
	}
}

// start sizes the miniature caches once the capacity in entries of the
// caches they model is estimated.
func (s *miniSims) start(est int) {
	gcap := est
	if est > adaptiveFull {
		gcap = min(max(adaptiveFull, est/16), adaptiveGhost)
	}
	rate := float64(gcap) / float64(est)
	s.limit = max(uint64(rate*(1<<32)), 1)
	// About one turnover of the miniature caches, enough sampled
	// references for a hit count to mean something, and no more than
	// 2048 so that a large cache on a short trace still adapts.
	s.period = max(min(gcap, 2048), 512)
	s.sampled = gcap < est
	if s.sampled {
		// A cache too large for exact miniature caches starts with the
		// victim's count capped: over the large traces (Zipf, P3,
		// Scarab, otter's Zipf) it beat TinyLFU's duel, while the small
		// looping and LIRS traces, whose miniature caches are exact
		// and switch sooner, need the uncapped duel from the start.
		for i, c := range s.configs {
			if !c.seen && c.admitCap > 0 {
				s.cur = i
				break
			}
		}
	}
	s.sims = make([]miniSim, len(s.configs))
	for i, c := range s.configs {
		g := newTinyLFU(int64(gcap))
		g.fixed = true
		g.windowFrac, g.admitSeen, g.admitCap = c.window, c.seen, c.admitCap
		g.setMaximum(int64(gcap))
		// The map grows as the cache fills, as the real cache's
		// memory does.
		s.sims[i] = miniSim{p: g, m: make(map[uint32]Handle), cap: gcap}
	}
	s.ready = true
}

// observe feeds a sampled reference to the key of fingerprint fp to the
// miniature caches and, at the end of a period, returns the configuration
// to switch to, or -1 to stay.
func (s *miniSims) observe(fp uint32) int {
	for i := range s.sims {
		s.sims[i].access(fp)
	}
	if !s.full {
		// Hit counts while the caches fill say little about how they
		// do when full: scoring starts when the miniature caches are.
		if len(s.sims[0].m) < s.sims[0].cap {
			return -1
		}
		s.full = true
		for i := range s.sims {
			s.sims[i].hits = 0
		}
	}
	s.refs++
	if s.refs < s.period {
		return -1
	}
	s.refs = 0
	for i := range s.sims {
		g := &s.sims[i]
		g.score = g.score*adaptiveDecay + float64(g.hits)
		g.hits = 0
	}
	best := s.choose()
	if best >= 0 {
		s.cur = best
		if s.sampled {
			s.restartFrom(best)
		}
	}
	return best
}

// restartFrom makes every other miniature cache a copy of miniature cache
// cur (contents, sketch, score and the period's hits so far), each still
// running its own configuration. Called on a switch when the miniature
// caches sample: the real cache keeps the contents the old configuration
// chose, so a challenger's lead is then measured from the same contents
// (what switching again would gain), not from the contents it would have
// chosen all along, a lead the real cache cannot collect.
func (s *miniSims) restartFrom(cur int) {
	src := &s.sims[cur]
	for i := range s.sims {
		if i == cur {
			continue
		}
		g := &s.sims[i]
		g.p.copyAs(src.p, s.configs[i])
		clear(g.m)
		maps.Copy(g.m, src.m)
		g.free = append(g.free[:0], src.free...)
		g.hits, g.score = src.hits, src.score
	}
}

// copyAs makes q a copy of p, a miniature cache's policy (no group), that
// shares no memory with it and runs configuration c. It reuses q's node
// and sketch pages (a switch restarts six miniature caches: copying into
// their buffers leaves no garbage behind).
func (q *tinyLFUPolicy) copyAs(p *tinyLFUPolicy, c config) {
	nodes, table := q.nodes, q.sk.table
	*q = *p
	q.nodes, q.sk.table = nodes, table
	q.nodes.copyFrom(&p.nodes)
	q.sk.table.copyFrom(&p.sk.table)
	if p.big != nil {
		q.big = maps.Clone(p.big)
	}
	if p.wide != nil {
		q.wide = maps.Clone(p.wide)
	}
	q.windowFrac, q.admitSeen, q.admitCap = c.window, c.seen, c.admitCap
	q.setMaximum(q.maximum)
}

// choose runs one evaluation of the scores and returns the configuration
// to switch to, or -1 to stay. Each challenger sums its leads over the
// current configuration, less adaptiveDrift, never below zero (CUSUM); of
// those whose sum reached their threshold (and, when the miniature caches
// sample, that led in the last adaptiveStreakSampled evaluations) the one
// with the most evidence wins, and every sum starts over.
func (s *miniSims) choose() int {
	if s.evals++; s.evals <= adaptiveWarmup {
		return -1
	}
	cur := s.sims[s.cur].score
	best := -1
	for i := range s.sims {
		g := &s.sims[i]
		if i == s.cur {
			g.evidence, g.streak = 0, 0
			continue
		}
		lead := (g.score - cur) / (2 * float64(s.period))
		g.evidence = max(0, g.evidence+lead-adaptiveDrift)
		if lead > adaptiveDrift {
			g.streak++
		} else {
			g.streak = 0
		}
		need, streak := adaptiveSwitch, 1
		if s.sampled {
			streak = adaptiveStreakSampled
		}
		if s.configs[i].seen != s.configs[s.cur].seen {
			need = adaptiveSwitchRule
			if s.sampled {
				need = adaptiveSwitchRuleSampled
			}
		}
		if g.evidence >= need && g.streak >= streak && (best < 0 || g.evidence > s.sims[best].evidence) {
			best = i
		}
	}
	if best >= 0 {
		for i := range s.sims {
			s.sims[i].evidence, s.sims[i].streak = 0, 0
		}
	}
	return best
}

// access references the key of fingerprint fp in the miniature cache,
// inserting it on a miss.
func (g *miniSim) access(fp uint32) {
	if h, ok := g.m[fp]; ok {
		g.p.onAccess(h)
		g.hits++
		return
	}
	for len(g.m) >= g.cap {
		v, ok := g.p.Victim(0)
		if !ok {
			break
		}
		delete(g.m, g.p.fp(v))
		g.p.Remove(v)
		g.free = append(g.free, v)
	}
	h := Handle(len(g.m))
	if n := len(g.free); n > 0 {
		h = g.free[n-1]
		g.free = g.free[:n-1]
	}
	g.m[fp] = h
	g.p.Add(h, Entry{Hash: uint64(fp) << 34, Size: 1})
}

// check verifies the group: its published state matches the miniature
// caches', and each of those is a consistent W-TinyLFU holding exactly the
// hashes its map names, at most its capacity, with the configuration it
// was built for.
func (g *adaptiveGroup) check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if int(g.cur.Load()) != g.sims.cur || g.limit.Load() != g.sims.limit {
		return errorf("adaptive: published configuration %d limit %d, miniature caches' %d %d", g.cur.Load(), g.limit.Load(), g.sims.cur, g.sims.limit)
	}
	return g.sims.check()
}

// check verifies the miniature caches (see adaptiveGroup.check).
func (s *miniSims) check() error {
	if s.cur < 0 || s.cur >= len(s.configs) {
		return errorf("adaptive: current configuration %d of %d", s.cur, len(s.configs))
	}
	if !s.ready {
		if len(s.sims) != 0 || s.limit != 0 {
			return errorf("adaptive: %d miniature caches, limit %d before start", len(s.sims), s.limit)
		}
		return nil
	}
	if len(s.sims) != len(s.configs) || s.limit == 0 {
		return errorf("adaptive: %d miniature caches for %d configurations, limit %d", len(s.sims), len(s.configs), s.limit)
	}
	for i := range s.sims {
		g := &s.sims[i]
		if err := g.p.check(); err != nil {
			return errorf("adaptive: miniature cache %d: %v", i, err)
		}
		if len(g.m) != g.p.count || len(g.m) > g.cap {
			return errorf("adaptive: miniature cache %d maps %d hashes, tracks %d, capacity %d", i, len(g.m), g.p.count, g.cap)
		}
		for fp, h := range g.m {
			if !g.p.tracked(h) || g.p.fp(h) != fp {
				return errorf("adaptive: miniature cache %d: fingerprint %x at handle %d inconsistent", i, fp, h)
			}
		}
		c := s.configs[i]
		if g.p.windowFrac != c.window || g.p.admitSeen != c.seen || g.p.admitCap != c.admitCap {
			return errorf("adaptive: miniature cache %d runs the wrong configuration", i)
		}
	}
	return nil
}
