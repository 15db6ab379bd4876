package evict

// none marks an absent link or position in the per-handle slices.
const none = ^uint32(0)

// denseSet is the set of tracked handles kept as a dense array plus a
// position index, so that add, remove, membership and a uniformly random
// member all cost O(1). It is pointer-free per handle and paged (see
// pages): 8 bytes per handle, plus less than a page of slack each.
type denseSet struct {
	keys pages[Handle] // live handles in keys[0:n], in no particular order
	n    int
	pos  pages[uint32] // pos[h] = index of h in keys, or none
}

// grow makes pos addressable at h.
func (s *denseSet) grow(h Handle) {
	from := s.pos.len()
	if !s.pos.grow(h) {
		return
	}
	for i := from; i < s.pos.len(); i++ {
		*s.pos.at(Handle(i)) = none
	}
}

func (s *denseSet) has(h Handle) bool {
	return int(h) < s.pos.len() && *s.pos.at(h) != none
}

// key returns the i-th member, i < len.
func (s *denseSet) key(i int) Handle { return *s.keys.at(Handle(i)) }

// add inserts h; it reports false if h was already present.
func (s *denseSet) add(h Handle) bool {
	s.grow(h)
	if *s.pos.at(h) != none {
		return false
	}
	s.keys.grow(Handle(s.n))
	*s.pos.at(h) = uint32(s.n)
	*s.keys.at(Handle(s.n)) = h
	s.n++
	return true
}

// remove deletes h by swapping the last member into its slot; it reports
// false if h was absent.
func (s *denseSet) remove(h Handle) bool {
	if !s.has(h) {
		return false
	}
	i := *s.pos.at(h)
	last := s.key(s.n - 1)
	*s.keys.at(Handle(i)) = last
	*s.pos.at(last) = i
	s.n--
	*s.pos.at(h) = none
	return true
}

func (s *denseSet) len() int { return s.n }

// bytes reports the memory the set holds.
func (s *denseSet) bytes() int { return s.keys.bytes(4) + s.pos.bytes(4) }

// check verifies that keys and pos agree.
func (s *denseSet) check() error {
	n := 0
	for h := range s.pos.len() {
		p := *s.pos.at(Handle(h))
		if p == none {
			continue
		}
		n++
		if int(p) >= s.n || s.key(int(p)) != Handle(h) {
			return errorf("denseSet: pos[%d]=%d does not point back", h, p)
		}
	}
	if n != s.n {
		return errorf("denseSet: %d positions for %d keys", n, s.n)
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
