package evict

// Adaptive is W-TinyLFU whose configuration is chosen, and re-chosen as
// the workload changes, by miniature simulation (Waldspurger et al.,
// "Cache Modeling and Optimization using Miniature Simulations", USENIX
// ATC 2017; Einziger, Eytan, Friedman and Manes, "Adaptive Software Cache
// Management", Middleware 2018, which evaluates it for W-TinyLFU). It is
// the candidate to become the recommended policy for caches (TinyLFU is
// today's: see bench/HITRATIO.md for the rows where Adaptive still falls
// below otter or S3-FIFO).
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
//   - windows of 20% and 40% where a candidate is admitted if it was
//     referenced at least twice recently, whatever the victim's count,
//     and a protected entry whose count decayed below the victim's is
//     evicted first: S3-FIFO's and 2Q's rule, best where recency
//     dominates and high counts are a negative signal (the Scarab, P3
//     and Sprite traces).
//
// Each configuration runs in a miniature cache on the side: a W-TinyLFU
// over key hashes only, fed the references (hits and writes) of the keys
// whose mixed hash falls in a fixed sample, with its capacity scaled by the
// sampling rate. Caches of up to adaptiveFull entries sample every key
// (the miniature caches are then exact simulations); larger ones sample
// about adaptiveFull to adaptiveGhost keys' worth. Scoring starts when the
// miniature caches are full; every period (about one cache turnover of
// references) each score is halved and gains the period's hits.
//
// Switching costs hits (the real cache's contents were chosen by the old
// configuration), so a challenger must earn it: after adaptiveWarmup
// evaluations (the scores right after the caches fill mislead), each
// challenger accumulates its lead over the current configuration, in
// points of hit ratio, less adaptiveDrift per evaluation, and never below
// zero (a CUSUM test); it replaces the current configuration when that sum
// reaches adaptiveSwitch, or adaptiveSwitchRule if it has the other
// admission rule (a switch between the rules replaces most of the
// contents, and a phase where the other rule leads is often short). A
// large lead thus switches in one evaluation, a lead of a point in about
// sixteen. On a switch the real cache moves its window boundary and
// admission rule, and its contents migrate as it runs.
//
// Unlike a hill climber, which follows one noisy hit rate's gradient and
// can only move the window (the sketch always filters), the miniature
// caches compare the candidates side by side on the same references, and
// include an admission rule that does not trust high counts.
//
// Concurrency: none of its own, as TinyLFU (see the package doc).
//
// Cost: TinyLFU's, plus, for each reference (hit or write) to a sampled
// key, one reference in each of the 6 miniature caches (a map lookup and
// O(1) list moves, and on a miss an eviction). Caches of up to
// adaptiveFull entries sample every key: BenchmarkVictimSmall (a write
// that evicts, 2048 entries) measured about 10 times TinyLFU's time per
// write (2.6–3.7 µs against 0.2–0.4 µs on a loaded 2-core machine).
// Larger shards sample a fraction of about adaptiveFull/entries or less:
// BenchmarkVictim (65536 entries) measured about 2 times TinyLFU's.
//
// Memory: TinyLFU's (14 bytes per entry, 8 to 16 of sketch per entry of
// capacity), plus the miniature
// caches: 6 × (about 45 bytes per miniature entry, map, sketch and
// buffers included), where a miniature cache holds
// min(entries, adaptiveFull) entries, or up to adaptiveGhost for shards
// of more than 16×adaptiveFull entries. Measured: about 0.6 MB for a shard
// of 2048 entries (300 bytes per entry), 0.75 MB at 8192 entries, and at
// most about 1.1 MB per shard beyond TinyLFU's own. That is a large
// overhead for small shards of small entries; the miniature caches are
// built when the shard is half full.
//
// The zero Spec value is NoEviction; build instances with Adaptive.New.
var Adaptive = Spec{Name: "adaptive", New: newAdaptivePolicy}

func newAdaptivePolicy(shardBytes int64) Policy { return newAdaptive(shardBytes, adaptiveConfigs) }

// adaptivePolicy is the policy of Adaptive, whose doc describes it: a
// W-TinyLFU with its miniature caches.
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
	// admission rule needs.
	adaptiveSwitchRule = 0.3
)

// config is one candidate setting of the W-TinyLFU structure.
type config struct {
	window float64 // the window's share of the capacity
	seen   bool    // admit a candidate referenced twice (as S3-FIFO and 2Q do)
}

var adaptiveConfigs = []config{
	{0.01, false}, {0.2, false}, {0.5, false}, {0.8, false},
	{0.2, true}, {0.4, true},
}

// miniSims are the miniature caches of an Adaptive policy.
type miniSims struct {
	configs []config
	sims    []miniSim
	cur     int    // index of the configuration the real cache runs
	limit   uint64 // a hash is sampled iff its mixed top 32 bits are < limit
	full    bool   // the miniature caches have filled: scoring has begun
	evals   int    // evaluations since the miniature caches filled
	refs    int    // sampled references this period
	period  int
	ready   bool
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
}

func newAdaptive(shardBytes int64, configs []config) *adaptivePolicy {
	p := newTinyLFU(-1)
	p.hint = shardBytes
	p.fixed = true
	p.sims = &miniSims{configs: configs}
	p.applyConfig(configs[0])
	if shardBytes > 0 {
		p.setMaximum(shardBytes)
	}
	return &adaptivePolicy{tinyLFUPolicy: p}
}

// applyConfig makes c the real cache's configuration; maintain moves the
// entries over the new boundaries (a larger window fills with new writes).
func (p *tinyLFUPolicy) applyConfig(c config) {
	p.windowFrac, p.admitSeen = c.window, c.seen
	if p.maximum > 0 {
		p.setMaximum(p.maximum)
	}
}

// start sizes the miniature caches once the real cache's capacity in
// entries is estimated.
func (s *miniSims) start(est int) {
	gcap := est
	if est > adaptiveFull {
		gcap = min(max(adaptiveFull, est/16), adaptiveGhost)
	}
	rate := float64(gcap) / float64(est)
	s.limit = uint64(rate * (1 << 32))
	// About one turnover of the miniature caches, enough sampled
	// references for a hit count to mean something, and no more than
	// 2048 so that a large cache on a short trace still adapts.
	s.period = max(min(gcap, 2048), 512)
	s.sims = make([]miniSim, len(s.configs))
	for i, c := range s.configs {
		g := newTinyLFU(int64(gcap))
		g.fixed = true
		g.windowFrac, g.admitSeen = c.window, c.seen
		g.setMaximum(int64(gcap))
		s.sims[i] = miniSim{p: g, m: make(map[uint32]Handle, gcap), cap: gcap}
	}
	s.ready = true
}

// observe feeds a reference to the key of fingerprint fp to the miniature
// caches and, at the end of a period, switches p to the best
// configuration.
func (s *miniSims) observe(p *tinyLFUPolicy, fp uint32) {
	if !s.ready {
		if p.est <= 0 {
			return
		}
		s.start(p.est)
	}
	if mix64(uint64(fp)^0x61646170)>>32 >= s.limit {
		return
	}
	for i := range s.sims {
		s.sims[i].access(fp)
	}
	if !s.full {
		// Hit counts while the caches fill say little about how they
		// do when full: scoring starts when the miniature caches are.
		if len(s.sims[0].m) < s.sims[0].cap {
			return
		}
		s.full = true
		for i := range s.sims {
			s.sims[i].hits = 0
		}
	}
	s.refs++
	if s.refs < s.period {
		return
	}
	s.refs = 0
	for i := range s.sims {
		g := &s.sims[i]
		g.score = g.score*adaptiveDecay + float64(g.hits)
		g.hits = 0
	}
	if best := s.choose(); best >= 0 {
		s.cur = best
		p.applyConfig(s.configs[best])
	}
}

// choose runs one evaluation of the scores and returns the configuration
// to switch to, or -1 to stay. Each challenger sums its leads over the
// current configuration, less adaptiveDrift, never below zero (CUSUM); of
// those whose sum reached their threshold the one with the most evidence
// wins, and every sum starts over.
func (s *miniSims) choose() int {
	if s.evals++; s.evals <= adaptiveWarmup {
		return -1
	}
	cur := s.sims[s.cur].score
	best := -1
	for i := range s.sims {
		g := &s.sims[i]
		if i == s.cur {
			g.evidence = 0
			continue
		}
		lead := (g.score - cur) / (2 * float64(s.period))
		g.evidence = max(0, g.evidence+lead-adaptiveDrift)
		need := adaptiveSwitch
		if s.configs[i].seen != s.configs[s.cur].seen {
			need = adaptiveSwitchRule
		}
		if g.evidence >= need && (best < 0 || g.evidence > s.sims[best].evidence) {
			best = i
		}
	}
	if best >= 0 {
		for i := range s.sims {
			s.sims[i].evidence = 0
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

// check verifies the miniature caches: each is a consistent W-TinyLFU
// holding exactly the hashes its map names, at most its capacity, with
// the configuration it was built for; and the real cache runs the current
// configuration.
func (s *miniSims) check(p *tinyLFUPolicy) error {
	if s.cur < 0 || s.cur >= len(s.configs) {
		return errorf("adaptive: current configuration %d of %d", s.cur, len(s.configs))
	}
	if c := s.configs[s.cur]; p.windowFrac != c.window || p.admitSeen != c.seen {
		return errorf("adaptive: real cache runs window %.2f seen %v, want %+v", p.windowFrac, p.admitSeen, c)
	}
	if !s.ready {
		if len(s.sims) != 0 {
			return errorf("adaptive: %d miniature caches before start", len(s.sims))
		}
		return nil
	}
	if len(s.sims) != len(s.configs) {
		return errorf("adaptive: %d miniature caches for %d configurations", len(s.sims), len(s.configs))
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
		if g.p.windowFrac != c.window || g.p.admitSeen != c.seen {
			return errorf("adaptive: miniature cache %d runs the wrong configuration", i)
		}
	}
	return nil
}
