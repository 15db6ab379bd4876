package evict

import (
	"fmt"
	"os"
)

// Adaptive is W-TinyLFU whose configuration is chosen, and re-chosen as the
// workload changes, by miniature simulation (Waldspurger et al., "Cache
// Modeling and Optimization using Miniature Simulations", USENIX ATC 2017;
// Einziger, Eytan, Friedman and Manes, "Adaptive Software Cache
// Management", Middleware 2018, which evaluates it for W-TinyLFU).
//
// The resident entries are managed exactly as by TinyLFU (an LRU admission
// window in front of a segmented-LRU main region, a count-min sketch
// deciding admission), except that the window's share and whether the
// sketch filters admission at all are not tuned by a hill climber but
// picked from a few fixed configurations: a 1% window with admission
// (TinyLFU's start, best for frequency-skewed workloads and scans), larger
// windows with admission, and a segmented LRU without admission (best
// where recency dominates and frequency misleads, as in S3-FIFO's and
// 2Q's best cases). Each configuration is simulated on the side by a
// miniature cache: the keys whose mixed hash falls in a fixed sample (all
// keys for small caches, else about adaptiveGhost of them in
// expectation) are fed to one small W-TinyLFU per configuration, holding
// only hashes, sized to the same fraction of the capacity. Every period
// the configuration whose miniature cache had the most hits (counts decay
// by half each period, so old behaviour fades) becomes the real one; the
// real cache then moves its window boundary, as the hill climber would.
//
// Unlike a hill climber, which follows the gradient of one noisy hit
// rate and stops in local optima (a 1% to 80% window range with the
// sketch always on cannot reach LRU's hit ratio on traces where frequency
// is a negative signal), the miniature caches compare the candidates
// side by side on the same references.
//
// Concurrency: as TinyLFU (Access and Miss are lossy buffer pushes; all
// other work happens under the shard write lock).
//
// Cost: Access and Miss O(1); a write costs TinyLFU's plus, for a sampled
// key, one miniature-cache reference per configuration (a map lookup and
// O(1) list moves each). With the default sample every reference of a
// cache of up to adaptiveGhost entries is sampled, so its writes and
// drained reads cost about adaptiveConfigs+1 times TinyLFU's; larger
// caches sample proportionally fewer keys. Memory: TinyLFU's 25 bytes per
// entry and sketch, plus the miniature caches: adaptiveConfigs × (about
// 70 bytes + a sketch word) per sampled entry, at most about adaptiveGhost
// entries each (roughly 1.3 MB in all per shard at the cap, less for small
// caches).
//
// The zero value is not usable; build instances with Adaptive.New.
var Adaptive = Spec{Name: "adaptive", New: newAdaptivePolicy}

func newAdaptivePolicy(shardBytes int64) Policy { return newAdaptive(shardBytes, adaptiveConfigs) }

// adaptiveGhost is the target number of entries of each miniature cache.
const adaptiveGhost = 4096

// adaptiveMargin is the relative lead in miniature-cache hits a
// challenger needs over the current configuration.
const adaptiveMargin = 0.03

// config is one candidate setting of the W-TinyLFU structure.
type config struct {
	window   float64 // the window's share of the capacity
	admitAll bool    // no frequency filter: the main region is a segmented LRU
}

var adaptiveConfigs = []config{
	{0.01, false}, {0.2, false}, {0.5, false}, {0.8, false}, {0.01, true},
}

// miniSims are the miniature caches of an Adaptive policy.
type miniSims struct {
	configs []config
	sims    []miniSim
	cur     int    // index of the configuration the real cache runs
	limit   uint64 // a hash is sampled iff its mixed top 32 bits are < limit
	lead    int    // the challenger that led at the last evaluation, or -1
	refs    int    // sampled references this period
	period  int
	ready   bool
}

// miniSim is one miniature cache: a W-TinyLFU over hashes, in entries.
type miniSim struct {
	p     *tinyLFUPolicy
	m     map[uint64]Handle
	keys  []uint64
	free  []Handle
	cap   int
	hits  int
	score float64
}

func newAdaptive(shardBytes int64, configs []config) *tinyLFUPolicy {
	p := newTinyLFU(-1)
	p.hint = shardBytes
	p.fixed = true
	p.sims = &miniSims{configs: configs}
	p.applyConfig(configs[0])
	if shardBytes > 0 {
		p.setMaximum(shardBytes)
	}
	return p
}

// applyConfig makes c the real cache's configuration; maintain moves the
// entries over the new boundaries.
func (p *tinyLFUPolicy) applyConfig(c config) {
	p.windowFrac, p.admitAll = c.window, c.admitAll
	if p.maximum > 0 {
		p.setMaximum(p.maximum)
	}
}

// start sizes the miniature caches once the real cache's capacity in
// entries is estimated.
func (s *miniSims) start(est int) {
	rate := min(1, float64(adaptiveGhost)/float64(est))
	s.limit = uint64(rate * (1 << 32))
	gcap := max(1, int(rate*float64(est)+0.5))
	s.period = max(gcap, 512)
	s.sims = make([]miniSim, len(s.configs))
	for i, c := range s.configs {
		g := newTinyLFU(int64(gcap))
		g.fixed = true
		g.windowFrac, g.admitAll = c.window, c.admitAll
		g.setMaximum(int64(gcap))
		s.sims[i] = miniSim{p: g, m: make(map[uint64]Handle, gcap), cap: gcap}
	}
	s.lead = -1
	s.ready = true
}

// observe feeds a reference to hash to the miniature caches and, at the
// end of a period, switches p to the best configuration.
func (s *miniSims) observe(p *tinyLFUPolicy, hash uint64) {
	if !s.ready {
		if p.est <= 0 {
			return
		}
		s.start(p.est)
	}
	if mix64(hash^0x61646170)>>32 >= s.limit {
		return
	}
	for i := range s.sims {
		s.sims[i].access(hash)
	}
	s.refs++
	if s.refs < s.period {
		return
	}
	s.refs = 0
	best := s.cur
	for i := range s.sims {
		g := &s.sims[i]
		g.score = g.score/2 + float64(g.hits)
		g.hits = 0
		if g.score > s.sims[best].score {
			best = i
		}
	}
	if debugAdaptive {
		sc := make([]float64, len(s.sims))
		for i := range s.sims {
			sc[i] = s.sims[i].score
		}
		println(fmtScores(sc), best)
	}
	// A challenger must lead the current configuration clearly in two
	// evaluations in a row: a phase shorter than that rarely repays the
	// cost of moving the real cache's boundaries.
	cur := s.sims[s.cur].score
	if best == s.cur || s.sims[best].score < cur*(1+adaptiveMargin)+1 {
		s.lead = -1
		return
	}
	if s.lead != best {
		s.lead = best
		return
	}
	s.lead = -1
	s.cur = best
	p.applyConfig(s.configs[best])
}

// access references hash in the miniature cache, inserting it on a miss.
func (g *miniSim) access(hash uint64) {
	if h, ok := g.m[hash]; ok {
		g.p.onAccess(h)
		g.hits++
		return
	}
	for len(g.m) >= g.cap {
		v, ok := g.p.Victim(0)
		if !ok {
			break
		}
		delete(g.m, g.keys[v])
		g.p.Remove(v)
		g.free = append(g.free, v)
	}
	var h Handle
	if n := len(g.free); n > 0 {
		h = g.free[n-1]
		g.free = g.free[:n-1]
		g.keys[h] = hash
	} else {
		h = Handle(len(g.keys))
		g.keys = append(g.keys, hash)
	}
	g.m[hash] = h
	g.p.Add(h, Entry{Hash: hash, Size: 1})
}

// AdaptiveFixed is a temporary experiment hook.
func AdaptiveFixed(window float64, admitAll bool) Spec {
	return Spec{Name: "fixed", New: func(b int64) Policy {
		p := newAdaptive(b, []config{{window, admitAll}})
		return p
	}}
}

var debugAdaptive = os.Getenv("ADEBUG") != ""

func fmtScores(x []float64) string { return fmt.Sprint(x) }
