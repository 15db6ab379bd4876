package evict

// none marks an absent link or position in the per-handle slices.
const none = ^uint32(0)

// denseSet is the set of tracked handles kept as a dense array plus a
// position index, so that add, remove, membership and a uniformly random
// member all cost O(1). It is pointer-free: 8 bytes per handle.
type denseSet struct {
	keys []Handle // live handles, in no particular order
	pos  []uint32 // pos[h] = index of h in keys, or none
}

// grow makes pos addressable at h.
func (s *denseSet) grow(h Handle) {
	if int(h) < len(s.pos) {
		return
	}
	n := growLen(h, len(s.pos))
	p := make([]uint32, n)
	copy(p, s.pos)
	for i := len(s.pos); i < n; i++ {
		p[i] = none
	}
	s.pos = p
}

func (s *denseSet) has(h Handle) bool {
	return int(h) < len(s.pos) && s.pos[h] != none
}

// add inserts h; it reports false if h was already present.
func (s *denseSet) add(h Handle) bool {
	s.grow(h)
	if s.pos[h] != none {
		return false
	}
	s.pos[h] = uint32(len(s.keys))
	s.keys = append(s.keys, h)
	return true
}

// remove deletes h by swapping the last member into its slot; it reports
// false if h was absent.
func (s *denseSet) remove(h Handle) bool {
	if !s.has(h) {
		return false
	}
	i := s.pos[h]
	last := s.keys[len(s.keys)-1]
	s.keys[i] = last
	s.pos[last] = i
	s.keys = s.keys[:len(s.keys)-1]
	s.pos[h] = none
	return true
}

func (s *denseSet) len() int { return len(s.keys) }

// check verifies that keys and pos agree.
func (s *denseSet) check() error {
	n := 0
	for h, p := range s.pos {
		if p == none {
			continue
		}
		n++
		if int(p) >= len(s.keys) || s.keys[p] != Handle(h) {
			return errorf("denseSet: pos[%d]=%d does not point back", h, p)
		}
	}
	if n != len(s.keys) {
		return errorf("denseSet: %d positions for %d keys", n, len(s.keys))
	}
	return nil
}

// rng is a small, fast, deterministic PRNG (splitmix64). It is not safe for
// concurrent use; policies use it under the shard write lock only.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n) for n > 0 (Lemire's multiply-shift; the
// bias is negligible for the set sizes a shard holds).
func (r *rng) intn(n int) int {
	hi, _ := mul64(r.next(), uint64(n))
	return int(hi)
}
