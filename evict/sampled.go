package evict

// Sampling parameters shared by the sampled policies (AllKeysLFU,
// VolatileLFU, VolatileTTL; LRU keeps an exact heap instead). Redis uses
// maxmemory-samples 5 and a pool of 16; tide samples a little more per
// eviction because a Victim call is cheap next to a Redis command.
const (
	sampleCount = 10
	poolSize    = 16
)

type candidate struct {
	h     Handle
	score uint64 // higher is evicted first
}

// sampler is the Redis-style "sample and keep a pool of the best
// candidates" victim search, shared by the sampled policies. The pool
// carries good candidates from one eviction to the next, which is what makes
// a handful of random samples approximate an exact ordering well.
type sampler struct {
	set  denseSet
	rng  rng
	pool []candidate // sorted by score, best last; at most poolSize
}

func newSampler(seed uint64) sampler {
	return sampler{rng: rng{s: seed}, pool: make([]candidate, 0, poolSize+sampleCount)}
}

// victim returns the live handle with the highest score among the pool and
// sampleCount fresh random samples. score is re-read for pooled handles,
// since their metadata may have changed since they were pooled.
func (s *sampler) victim(score func(Handle) uint64) (Handle, bool) {
	n := s.set.len()
	if n == 0 {
		s.pool = s.pool[:0]
		return 0, false
	}
	// Refresh the pool: drop handles no longer tracked, re-score the rest.
	p := s.pool[:0]
	for _, c := range s.pool {
		if s.set.has(c.h) {
			p = append(p, candidate{c.h, score(c.h)})
		}
	}
	s.pool = p
	if n <= sampleCount+poolSize {
		// Small sets are scanned exactly.
		s.pool = s.pool[:0]
		for _, h := range s.set.keys {
			s.pool = append(s.pool, candidate{h, score(h)})
		}
	} else {
		for range sampleCount {
			h := s.set.keys[s.rng.intn(n)]
			if s.inPool(h) {
				continue
			}
			s.pool = append(s.pool, candidate{h, score(h)})
		}
	}
	// Insertion sort: the pool is tiny and mostly sorted already.
	for i := 1; i < len(s.pool); i++ {
		c := s.pool[i]
		j := i
		for j > 0 && s.pool[j-1].score > c.score {
			s.pool[j] = s.pool[j-1]
			j--
		}
		s.pool[j] = c
	}
	if len(s.pool) > poolSize {
		k := len(s.pool) - poolSize
		copy(s.pool, s.pool[k:])
		s.pool = s.pool[:poolSize]
	}
	return s.pool[len(s.pool)-1].h, true
}

func (s *sampler) inPool(h Handle) bool {
	for _, c := range s.pool {
		if c.h == h {
			return true
		}
	}
	return false
}

// forget drops h from the pool (called on Remove so that a reused handle
// does not inherit a stale pool slot; victim re-scores anyway).
func (s *sampler) forget(h Handle) {
	for i, c := range s.pool {
		if c.h == h {
			s.pool = append(s.pool[:i], s.pool[i+1:]...)
			return
		}
	}
}

func (s *sampler) check() error {
	if err := s.set.check(); err != nil {
		return err
	}
	if len(s.pool) > poolSize {
		return errorf("sampler: pool has %d > %d candidates", len(s.pool), poolSize)
	}
	seen := map[Handle]bool{}
	for _, c := range s.pool {
		if !s.set.has(c.h) {
			return errorf("sampler: pool holds untracked handle %d", c.h)
		}
		if seen[c.h] {
			return errorf("sampler: pool holds handle %d twice", c.h)
		}
		seen[c.h] = true
	}
	return nil
}
