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

// TestReview8TinyLFUDuelsWindowEntriesItMovesToProbation: a TinyLFU cache
// filled to its cap and then read (every key twice, then the even keys 60
// times each) promotes every main entry to protected: probation is empty
// and protected over its share, since an Access does not run maintain.
// The next Victim runs maintain, whose hill climber (decreaseWindow)
// shrinks the window below one entry (57 of 101 bytes) and moves the
// window's entries into probation, and which then demotes protected
// overflow to probation's most recent end, ahead of them: the former
// window entries are now probation's least recent, and Victim returns
// them with no duel (the window is empty), however frequent. So a key
// read 60 times (frequency 15) is evicted while keys read twice
// (frequency 2) stay. Caffeine's climb demotes protected overflow before
// it moves window entries into probation, and its eviction duels every
// entry that leaves the window (evictFromMain's candidates) against
// probation's victim, window empty or not. Demoting first fixes this
// test; dueling probation's newest entry when the window is empty fixes
// TestReview8TinyLFUAdmitsWhenTheWindowHoldsNoEntry too.
func TestReview8TinyLFUDuelsWindowEntriesItMovesToProbation(t *testing.T) {
	const n, size = 256, 101
	p := newTinyLFU(n * size)
	r := rng{s: 5}
	for i := range n {
		p.Add(Handle(i), Entry{Hash: r.next(), Size: size})
	}
	for range 2 {
		for i := range n {
			p.Access(Handle(i))
		}
	}
	hot := func(h Handle) bool { return h < n && h%2 == 0 }
	for range 60 {
		for i := 0; i < n; i += 2 {
			p.Access(Handle(i))
		}
	}
	for i := range n / 2 {
		v, ok := p.Victim(0)
		if !ok {
			t.Fatal("no victim")
		}
		if hot(v) {
			t.Fatalf("victim %d is %d, read 60 times (frequency %d), while %d keys read twice are still held (window %d of max %d bytes, %d entries; probation %d; protected %d)",
				i+1, v, p.sk.frequency(p.fp(v)), n/2-i, p.q[segWindow].bytes, p.windowMax, p.q[segWindow].n, p.q[segProbation].n, p.q[segProtected].n)
		}
		p.Remove(v)
		p.Add(Handle(n+i), Entry{Hash: r.next(), Size: size})
		if err := p.check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReview8TinyLFUAdmitsWhenTheWindowHoldsNoEntry: a shard whose window
// share (1% of its cap) is smaller than one entry (a small cap, or large
// entries; the hill climber can also shrink the window below an entry, as
// in the test above) moves every new entry straight into probation
// (maintain), so Victim never finds a window entry to duel with and
// returns probation's least recent entry unconditionally: the frequency
// filter that makes TinyLFU scan resistant is off. Here 45 keys are read
// round-robin 20 times in a cache of 50 (protected holds 40 of them, the 5
// read least recently wait in probation); a scan of 100 keys never read
// must not evict keys read 20 times (Caffeine's evictFromMain duels each
// entry that leaves the window against probation's victim).
func TestReview8TinyLFUAdmitsWhenTheWindowHoldsNoEntry(t *testing.T) {
	const n, hot, size = 50, 45, 101
	p := newTinyLFU(n * size)
	r := rng{s: 9}
	for i := range n {
		p.Add(Handle(i), Entry{Hash: r.next(), Size: size})
	}
	for range 20 {
		for i := range hot {
			p.Access(Handle(i))
		}
	}
	var lost []Handle
	for i := range 100 {
		if p.total+size > p.maximum {
			v, ok := p.Victim(0)
			if !ok {
				t.Fatal("no victim")
			}
			if v < hot {
				lost = append(lost, v)
			}
			p.Remove(v)
		}
		p.Add(Handle(n+i), Entry{Hash: r.next(), Size: size})
		if err := p.check(); err != nil {
			t.Fatal(err)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("a scan of keys never read evicted %d keys read 20 times: %v (window max %d bytes, entries of %d)", len(lost), lost, p.windowMax, size)
	}
}
