package evict

import "testing"

// TestReview8PairingUnderAdversarialReferences guards TinyLFU's Miss/Add
// pairing (pairRef, pairSlots) against references an adversary chooses:
// misses of keys never added that share the target's pairing slot (a
// flood), adds without misses, several misses before one add, a key
// removed and read again. Each case states the count the target must
// gain: a pair counts once, anything unpaired counts once per reference,
// so the target's count is never below half its references (it cannot be
// made to evade admission) and a flood of other keys adds nothing to it
// (it cannot pin a victim). Check passes after every case.
func TestReview8PairingUnderAdversarialReferences(t *testing.T) {
	const shardBits = 0x2a
	r := rng{s: 88}
	p := newTinyLFU(1 << 16)
	for i := range 1 << 15 { // half the cap: the sketch counts
		p.Add(Handle(i), Entry{Hash: r.next()<<6 | shardBits, Size: 1})
	}
	next := Handle(1 << 15)
	hash := func() uint64 { return r.next()<<6 | shardBits }
	// colliding returns a hash whose fingerprint differs from a's but
	// takes the same pairing slot.
	colliding := func(a uint64) uint64 {
		for {
			b := hash()
			fa, fb := fingerprint(a), fingerprint(b)
			if fb != fa && fb&(pairSlots-1) == fa&(pairSlots-1) {
				return b
			}
		}
	}
	type env struct {
		k uint64
		h Handle
	}
	add := func(e *env) { e.h = next; next++; p.Add(e.h, Entry{Hash: e.k, Size: 1}) }
	flood := func(e *env, n int) {
		for range n {
			p.Miss(colliding(e.k))
		}
	}
	cases := []struct {
		name string
		refs func(e *env)
		want uint32
	}{
		{"adds without misses", func(e *env) {
			add(e)
			p.Remove(e.h)
			add(e)
			p.Remove(e.h)
			add(e)
		}, 3},
		{"a flood between the miss and its add loses the pair", func(e *env) {
			p.Miss(e.k)
			flood(e, 200)
			add(e)
		}, 2},
		{"a flood before the pair", func(e *env) {
			flood(e, 200)
			p.Miss(e.k)
			add(e)
		}, 1},
		{"a flood after the pair", func(e *env) {
			p.Miss(e.k)
			add(e)
			flood(e, 200)
		}, 1},
		{"an add of a colliding key between the add and its miss", func(e *env) {
			add(e)
			o := env{k: colliding(e.k)}
			add(&o)
			p.Miss(e.k)
		}, 2},
		{"three misses, then the add", func(e *env) {
			p.Miss(e.k)
			p.Miss(e.k)
			p.Miss(e.k)
			add(e)
		}, 3},
		{"the add, then two misses", func(e *env) {
			add(e)
			p.Miss(e.k)
			p.Miss(e.k)
		}, 2},
		{"removed, read again, added again", func(e *env) {
			p.Miss(e.k)
			add(e)
			p.Remove(e.h)
			p.Miss(e.k)
			add(e)
		}, 2},
		{"a miss of a key with the target's fingerprint pairs as the target's own would", func(e *env) {
			add(e)
			p.Miss(e.k ^ 1<<6) // same fingerprint (bits 34 up), another key
			p.Miss(e.k)
		}, 2},
	}
	for _, c := range cases {
		for i := range 20 {
			e := env{k: hash()}
			before := p.sk.frequency(fingerprint(e.k))
			c.refs(&e)
			if got := p.sk.frequency(fingerprint(e.k)) - before; got != c.want {
				t.Fatalf("%s (key %d): count grew by %d, want %d", c.name, i, got, c.want)
			}
			if err := p.check(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
	}
	for range 1000 {
		if _, ok := p.Victim(0); !ok {
			t.Fatal("no victim")
		}
	}
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
}
