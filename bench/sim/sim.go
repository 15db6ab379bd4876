package sim

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/tidekv/tide/evict"
)

// Cache is one simulated cache: Access reads key, inserts it on a miss, and
// reports whether it was a hit.
type Cache interface {
	Access(key uint64) bool
	// Close releases background resources (peers with goroutines).
	Close()
}

// Contender names a cache implementation and builds it for a capacity in
// entries.
type Contender struct {
	Name   string
	Tide   bool // one of tide's policies
	Engine bool // a tide policy run through the engine (EngineCache)
	Oracle bool // not a usable cache (OPT): excluded from "best in row"
	Runs   int  // runs to average (for nondeterministic peers); 0 means 1
	New    func(capacity int) Cache
	// NewTrace, if set, is used instead of New: it builds the cache for
	// the given trace (an oracle reads ahead).
	NewTrace func(keys []uint64, capacity int) Cache
	// NewSeeded, if set, is used instead of New: run r of a cell (0 ≤ r <
	// Runs) gets seed r, so a mean over Runs seeds is deterministic.
	NewSeeded func(capacity int, seed uint64) Cache
}

// build returns c's cache for keys at capacity entries, for run r.
func (c Contender) build(keys []uint64, capacity, r int) Cache {
	switch {
	case c.NewTrace != nil:
		return c.NewTrace(keys, capacity)
	case c.NewSeeded != nil:
		return c.NewSeeded(capacity, uint64(r))
	}
	return c.New(capacity)
}

// faulter is a Cache that records a contract violation.
type faulter interface{ Err() error }

// Averaged returns c run n times per cell, the result being the mean.
func Averaged(c Contender, n int) Contender {
	if c.Runs > 0 || n > 1 {
		c.Runs = max(n, 1)
	}
	return c
}

// HitRatio runs keys through c and returns hits / accesses in percent.
func HitRatio(keys []uint64, c Cache) float64 {
	if len(keys) == 0 {
		return 0
	}
	hits := 0
	for _, k := range keys {
		if c.Access(k) {
			hits++
		}
	}
	return 100 * float64(hits) / float64(len(keys))
}

// Result is one cell of the table.
type Result struct {
	Trace     string
	Capacity  int
	Contender string
	HitRatio  float64
	Err       error
}

// Run simulates every contender at every capacity of keys, using up to
// workers goroutines (0 = GOMAXPROCS), and returns the mean hit ratios,
// indexed [capacity][contender] (RunSE's means).
func Run(keys []uint64, caps []int, cs []Contender, workers int) [][]float64 {
	mean, _ := RunSE(keys, caps, cs, workers)
	return mean
}

// RunSE is Run with the standard error of each mean, from the spread of
// the contender's runs (hash seeds): the sample standard deviation over
// √Runs. A contender of one run gets NaN (its spread is not measured; a
// deterministic one has none).
func RunSE(keys []uint64, caps []int, cs []Contender, workers int) (mean, se [][]float64) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sum := make([][]float64, len(caps))
	sq := make([][]float64, len(caps))
	for i := range sum {
		sum[i] = make([]float64, len(cs))
		sq[i] = make([]float64, len(cs))
	}
	type job struct{ i, j, r int }
	jobs := make(chan job)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range jobs {
				c := cs[jb.j].build(keys, caps[jb.i], jb.r)
				r := HitRatio(keys, c)
				c.Close()
				if f, ok := c.(faulter); ok && f.Err() != nil {
					// A policy broke its contract: the figure is
					// meaningless and the bug must be seen.
					panic(fmt.Sprintf("sim: %s at %d: %v", cs[jb.j].Name, caps[jb.i], f.Err()))
				}
				mu.Lock()
				sum[jb.i][jb.j] += r
				sq[jb.i][jb.j] += r * r
				mu.Unlock()
			}
		}()
	}
	// Largest capacities first, so the longest jobs do not finish last.
	for i := len(caps) - 1; i >= 0; i-- {
		for j := range cs {
			for r := range max(cs[j].Runs, 1) {
				jobs <- job{i, j, r}
			}
		}
	}
	close(jobs)
	wg.Wait()
	mean, se = sum, sq // reused in place, cell by cell
	for i := range caps {
		for j := range cs {
			n := float64(max(cs[j].Runs, 1))
			m := sum[i][j] / n
			e := math.NaN()
			if n > 1 {
				// Sample variance; rounding can make it slightly negative.
				v := max(0, (sq[i][j]-n*m*m)/(n-1))
				e = math.Sqrt(v / n)
			}
			mean[i][j], se[i][j] = m, e
		}
	}
	return mean, se
}

// ExactLRU is a textbook LRU with a hash map and a doubly linked list kept
// in slices; it is the reference the trace readers are checked against.
type ExactLRU struct {
	cap        int
	m          map[uint64]int32
	key        []uint64
	prev, next []int32
	head, tail int32
}

// NewExactLRU returns an empty exact LRU of capacity entries (at least 1).
func NewExactLRU(capacity int) *ExactLRU {
	capacity = max(capacity, 1)
	return &ExactLRU{cap: capacity, m: make(map[uint64]int32, capacity), head: -1, tail: -1}
}

func (l *ExactLRU) unlink(i int32) {
	p, n := l.prev[i], l.next[i]
	if p >= 0 {
		l.next[p] = n
	} else {
		l.head = n
	}
	if n >= 0 {
		l.prev[n] = p
	} else {
		l.tail = p
	}
}

func (l *ExactLRU) pushFront(i int32) {
	l.prev[i], l.next[i] = -1, l.head
	if l.head >= 0 {
		l.prev[l.head] = i
	} else {
		l.tail = i
	}
	l.head = i
}

// Access implements Cache.
func (l *ExactLRU) Access(k uint64) bool {
	if i, ok := l.m[k]; ok {
		if i != l.head {
			l.unlink(i)
			l.pushFront(i)
		}
		return true
	}
	var i int32
	if len(l.m) >= l.cap {
		i = l.tail
		l.unlink(i)
		delete(l.m, l.key[i])
		l.key[i] = k
	} else {
		i = int32(len(l.key))
		l.key = append(l.key, k)
		l.prev = append(l.prev, -1)
		l.next = append(l.next, -1)
	}
	l.m[k] = i
	l.pushFront(i)
	return false
}

// Close implements Cache.
func (l *ExactLRU) Close() {}

// PolicyCache drives a tide eviction policy the way the engine does: a hit
// calls Access, a miss calls Miss, then (if full) Victim and Remove, then
// Add. Every entry has Size 1, so the policy's byte cap is the capacity.
// The simulated clock advances 1µs per access. Entry.Hash is a fixed mix
// of the key and the seed (0 unless built by NewSeededPolicyCache), as the
// engine's hash is a keyed hash with a per-engine seed.
type PolicyCache struct {
	p     evict.Policy
	seed  uint64
	cap   int
	m     map[uint64]evict.Handle
	key   []uint64
	free  []evict.Handle
	live  []bool
	now   int64
	Fault error // first contract violation seen (bad victim)
}

// NewPolicyCache builds spec's policy for capacity entries.
func NewPolicyCache(spec evict.Spec, capacity int) *PolicyCache {
	capacity = max(capacity, 1)
	return &PolicyCache{p: spec.New(int64(capacity)), cap: capacity, m: make(map[uint64]evict.Handle, capacity)}
}

// NewSeededPolicyCache is NewPolicyCache with the key hash mixed with
// seed: a policy whose choices depend on hash values (sketch collisions,
// sampling) can then be averaged over seeds, like a run through engines.
func NewSeededPolicyCache(spec evict.Spec, capacity int, seed uint64) *PolicyCache {
	c := NewPolicyCache(spec, capacity)
	if seed != 0 {
		c.seed = mix(seed) | 1
	}
	return c
}

// Access implements Cache.
func (c *PolicyCache) Access(k uint64) bool {
	c.now += 1000
	if h, ok := c.m[k]; ok {
		c.p.Access(h)
		return true
	}
	hash := mix(k ^ c.seed)
	c.p.Miss(hash)
	for len(c.m) >= c.cap {
		v, ok := c.p.Victim(c.now)
		if !ok || int(v) >= len(c.live) || !c.live[v] {
			if c.Fault == nil {
				c.Fault = fmt.Errorf("sim: Victim returned %d, %v with %d live entries", v, ok, len(c.m))
			}
			return false
		}
		delete(c.m, c.key[v])
		c.live[v] = false
		c.p.Remove(v)
		c.free = append(c.free, v)
	}
	var h evict.Handle
	if n := len(c.free); n > 0 {
		h = c.free[n-1]
		c.free = c.free[:n-1]
		c.key[h] = k
	} else {
		h = evict.Handle(len(c.key))
		c.key = append(c.key, k)
		c.live = append(c.live, false)
	}
	c.live[h] = true
	c.m[k] = h
	c.p.Add(h, evict.Entry{Hash: hash, Size: 1})
	return false
}

// Close implements Cache.
func (c *PolicyCache) Close() {}

// Err returns the first contract violation seen, if any.
func (c *PolicyCache) Err() error { return c.Fault }

// TideContenders are tide's policies as they appear in the table:
// Adaptive (the recommended policy) first, then Adaptive through the
// engine, then the others. The volatile-* variants run the same
// algorithms on the entries that have a TTL; the traces have no TTLs, so
// they are not listed (volatile-ttl would have nothing to order by).
func TideContenders() []Contender {
	specs := []evict.Spec{evict.Adaptive, evict.TinyLFU, evict.AllKeysLRU, evict.AllKeysLFU, evict.AllKeysRandom, evict.S3FIFO}
	var cs []Contender
	for i, s := range specs {
		c := Contender{Name: "tide " + s.Name, Tide: true, New: func(n int) Cache { return NewPolicyCache(s, n) }}
		if i == 0 {
			// Adaptive's choices depend on hash values (sampling,
			// sketch collisions); it is averaged over hash seeds, like
			// its run through engines, whose hash seeds are random.
			c.NewSeeded = func(n int, seed uint64) Cache { return NewSeededPolicyCache(s, n, seed) }
			cs = append(cs, c, EngineContender("tide "+s.Name, s))
			continue
		}
		cs = append(cs, c)
	}
	return cs
}

// MaxSeedRuns is the most hash seeds (runs) a seeded column of the report
// averages on a short trace (cmd/hitratio's -engine-accesses).
const MaxSeedRuns = 256

// Column names the report compares.
const (
	ColAdaptive = "tide adaptive"
	ColEngine   = "tide adaptive (engine)"
	ColTinyLFU  = "tide tinylfu"
	ColS3FIFO   = "tide s3fifo"
	ColOPT      = "OPT"
	ColOtter    = "otter"
)

// LRUContender is the exact LRU reference.
var LRUContender = Contender{Name: "exact LRU", New: func(n int) Cache { return NewExactLRU(n) }}
