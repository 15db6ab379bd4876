package evict

import (
	"testing"
)

// TestAdaptiveDemotesAtTheFirstEvictionWithoutACap guards Adaptive's fill
// demotion in a shard whose cap is unknown (zero or negative: the cap is
// then the largest total seen, so every Add that grows the total reaches
// it): the shard first fills when it first evicts, and the entries that
// hits protected before then move to probation at that Victim, as they do
// in a shard with a cap that no Add fills exactly.
func TestAdaptiveDemotesAtTheFirstEvictionWithoutACap(t *testing.T) {
	for _, hint := range []int64{0, -1} {
		p := newAdaptive(hint, newAdaptiveGroup(1, adaptiveConfigs)).tinyLFUPolicy
		const n = 60
		for i := range n {
			p.Add(Handle(i), Entry{Hash: mix64(uint64(i) + 1), Size: 2})
			if err := p.check(); err != nil {
				t.Fatalf("hint %d, add %d: %v", hint, i, err)
			}
		}
		for i := 0; i < n; i += 2 {
			p.Access(Handle(i))
		}
		protected := p.q[segProtected].n
		if protected == 0 {
			t.Fatalf("hint %d: no protected entry before the first eviction", hint)
		}
		v, ok := p.Victim(0)
		if !ok {
			t.Fatalf("hint %d: no victim", hint)
		}
		if got := p.q[segProtected].n; got != 0 {
			t.Fatalf("hint %d: %d of %d protected entries still protected at the first eviction, want 0", hint, got, protected)
		}
		p.Remove(v)
		if err := p.check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdaptiveFillDemotionKeepsInvariants drives Adaptive shards through
// a fill, an emptying and a refill, with entries larger than the cap,
// updates that grow and shrink entries across the fill, and removals of
// protected entries in the middle; Check holds after every step, the
// demotion runs once, and entries hit after it stay protected.
func TestAdaptiveFillDemotionKeepsInvariants(t *testing.T) {
	for _, capBytes := range []int64{1, 50, 1000} {
		p := newAdaptive(capBytes, newAdaptiveGroup(1, adaptiveConfigs)).tinyLFUPolicy
		r := rng{s: uint64(capBytes)}
		in := map[Handle]bool{}
		check := func(step int, what string) {
			t.Helper()
			if err := p.check(); err != nil {
				t.Fatalf("cap %d, step %d (%s): %v", capBytes, step, what, err)
			}
			if p.count != len(in) {
				t.Fatalf("cap %d, step %d (%s): %d tracked, want %d", capBytes, step, what, p.count, len(in))
			}
		}
		for round := range 3 { // fill, empty, refill
			for i := range 400 {
				h := Handle(r.intn(120))
				size := int64(1 + r.intn(20))
				if r.intn(50) == 0 {
					size = 2*capBytes + sizeBig // larger than the cap, in the big map
				}
				var what string
				switch op := r.intn(10); {
				case !in[h]:
					what = "add"
					p.Add(h, Entry{Hash: mix64(uint64(h) + 1), Size: size})
					in[h] = true
				case op < 4:
					what = "access"
					p.Access(h)
				case op < 6:
					what = "update"
					p.Update(h, Entry{Hash: mix64(uint64(h) + 1), Size: size})
				case op < 7:
					what = "remove"
					p.Remove(h)
					delete(in, h)
				default:
					what = "evict"
					if p.total > p.maximum {
						v, ok := p.Victim(0)
						if !ok {
							t.Fatalf("cap %d: no victim with %d tracked", capBytes, len(in))
						}
						p.Remove(v)
						delete(in, v)
					}
				}
				check(round*1000+i, what)
			}
			if !p.filled {
				t.Fatalf("cap %d, round %d: the shard never counted as filled", capBytes, round)
			}
			for h := range in {
				p.Remove(h)
				delete(in, h)
			}
			check(round*1000+999, "empty")
		}
	}
}
