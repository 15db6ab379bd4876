package evict

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// cacheRun drives p as the engine does (Access on a hit; Miss, Victim and
// Remove while full, then Add on a miss) over keys at capacity entries of
// size 1, calls each after every step, and returns the hit count.
func cacheRun(t *testing.T, p Policy, capacity int, keys []uint64, each func(i int)) int {
	t.Helper()
	hits, err := drive(p, capacity, keys, func(i int) bool {
		if each != nil {
			each(i)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// drive is cacheRun for any goroutine: it stops at the first step after
// which each returns false, and returns the hits so far and an error if
// Victim named no live handle.
func drive(p Policy, capacity int, keys []uint64, each func(i int) bool) (int, error) {
	m := map[uint64]Handle{}
	key := map[Handle]uint64{}
	var free []Handle
	next := Handle(0)
	hits := 0
	for i, k := range keys {
		hash := mix64(k)
		if h, ok := m[k]; ok {
			p.Access(h)
			hits++
		} else {
			p.Miss(hash)
			for len(m) >= capacity {
				v, ok := p.Victim(int64(i))
				if _, live := key[v]; !ok || !live {
					return hits, fmt.Errorf("step %d: Victim = %d, %v; not a live handle", i, v, ok)
				}
				delete(m, key[v])
				delete(key, v)
				p.Remove(v)
				free = append(free, v)
			}
			var h Handle
			if n := len(free); n > 0 {
				h, free = free[n-1], free[:n-1]
			} else {
				h, next = next, next+1
			}
			m[k], key[h] = h, k
			p.Add(h, Entry{Hash: hash, Size: 1})
		}
		if !each(i) {
			break
		}
	}
	return hits, nil
}

// shifting returns n references to a working set of width keys that
// slides forward one key every step references: recency is everything,
// and old frequency is a negative signal.
func shifting(n, width, step int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 1))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = uint64(i/step + r.IntN(width))
	}
	return keys
}

// skewedWithScans returns n references: 90% to a hot set of hot keys with
// a skewed (squared-uniform) distribution, 10% to never-repeated keys.
func skewedWithScans(n, hot int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 2))
	keys := make([]uint64, n)
	for i := range keys {
		if r.IntN(10) == 0 {
			keys[i] = 1<<40 + uint64(i)
			continue
		}
		u := r.Float64()
		keys[i] = uint64(u * u * float64(hot))
	}
	return keys
}

// TestAdaptiveInvariants checks the real cache and every miniature cache
// after each step of two workloads, and that the policy did compare
// configurations (its miniature caches started and filled).
func TestAdaptiveInvariants(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []uint64
	}{
		{"shifting", shifting(30_000, 600, 8, 1)},
		{"skewed with scans", skewedWithScans(30_000, 2000, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newAdaptive(300, newAdaptiveGroup(1, adaptiveConfigs))
			cacheRun(t, p, 300, tc.keys, func(i int) {
				if i%97 == 0 {
					if err := p.check(); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			})
			if err := p.check(); err != nil {
				t.Fatal(err)
			}
			if !p.group.sims.ready || !p.group.sims.full {
				t.Fatalf("miniature caches ready %v, full %v after %d references", p.group.sims.ready, p.group.sims.full, len(tc.keys))
			}
		})
	}
}

// TestAdaptiveLeavesFrequencyWhenRecencyWins guards the point of Adaptive:
// where the working set slides (recency wins, old counts mislead the
// sketch), it moves off TinyLFU's configuration and beats TinyLFU; where
// a skewed hot set is mixed with one-shot keys, it does at least about as
// well as TinyLFU.
func TestAdaptiveLeavesFrequencyWhenRecencyWins(t *testing.T) {
	const capacity = 500
	shift := shifting(200_000, 1500, 16, 3)
	a := newAdaptive(capacity, newAdaptiveGroup(1, adaptiveConfigs))
	left := false
	ha := cacheRun(t, a, capacity, shift, func(int) { left = left || a.applied != 0 })
	ht := cacheRun(t, newTinyLFU(capacity), capacity, shift, nil)
	if !left {
		t.Errorf("shifting working set: Adaptive never left TinyLFU's configuration")
	}
	if ha < ht+len(shift)/100 {
		t.Errorf("shifting working set: Adaptive %d hits, TinyLFU %d: want at least 1 point more", ha, ht)
	}

	skew := skewedWithScans(200_000, 5000, 3)
	sa := cacheRun(t, newAdaptive(capacity, newAdaptiveGroup(1, adaptiveConfigs)), capacity, skew, nil)
	st := cacheRun(t, newTinyLFU(capacity), capacity, skew, nil)
	if sa < st-len(skew)/200 {
		t.Errorf("skewed with scans: Adaptive %d hits, TinyLFU %d: want within 0.5 point", sa, st)
	}
	t.Logf("hits of %d: shifting: adaptive %d, tinylfu %d; skewed with scans: adaptive %d, tinylfu %d", len(shift), ha, ht, sa, st)
}

// TestAdaptiveSwitchRule guards the switching rule on given scores: a lead
// of many points switches after the warm-up in one evaluation, a lead of a
// point takes about a dozen, a lead below the drift never switches however long
// it lasts, a challenger with the other admission rule needs more
// evidence (less when the miniature caches sample the keys: a steady lead
// of a point must switch a large cache's rule within ten evaluations),
// evidence is lost when the lead is, and, when the miniature caches
// sample, a lead of one evaluation never switches however large.
func TestAdaptiveSwitchRule(t *testing.T) {
	const period = 1000
	// evaluations returns the evaluation (1-based, warm-up included) at
	// which choose first switches, given each evaluation's lead of
	// challenger ch in points (the other challengers trail by 5), or 0.
	evaluations := func(ch int, sampled bool, leads []float64) int {
		s := &miniSims{configs: adaptiveConfigs, period: period, sampled: sampled, sims: make([]miniSim, len(adaptiveConfigs))}
		for e, lead := range leads {
			for i := range s.sims {
				s.sims[i].score = 2 * period * 0.45
				if i != s.cur {
					s.sims[i].score -= 2 * period * 0.05
				}
			}
			s.sims[ch].score = 2 * period * (0.45 + lead/100)
			if got := s.choose(); got >= 0 {
				if got != ch {
					t.Fatalf("switched to %d, want %d", got, ch)
				}
				return e + 1
			}
		}
		return 0
	}
	repeat := func(lead float64, n int) []float64 {
		l := make([]float64, n)
		for i := range l {
			l[i] = lead
		}
		return l
	}
	w := adaptiveWarmup
	for _, tc := range []struct {
		name    string
		ch      int
		sampled bool
		leads   []float64
		want    int
	}{
		{"large lead, same rule", 2, false, repeat(10, 10), w + 1},
		{"lead during warm-up only", 2, false, append(repeat(30, w), repeat(0, 10)...), 0},
		{"a point, same rule", 1, false, repeat(1.2, 20), w + 12},
		{"a point, same rule, sampled", 1, true, repeat(1.2, 20), w + 12},
		{"below the drift", 1, false, repeat(0.4, 200), 0},
		{"below the drift, other rule, sampled", 4, true, repeat(0.4, 200), 0},
		{"large lead, other rule", 4, false, repeat(10, 10), w + 4},
		{"large lead, other rule, sampled", 4, true, repeat(10, 10), w + 2},
		{"one-evaluation burst", 2, false, append(append(repeat(0, w), 30), repeat(-5, 10)...), w + 1},
		{"one-evaluation burst, sampled", 2, true, append(append(repeat(0, w), 30), repeat(-5, 10)...), 0},
		{"large lead, same rule, sampled", 2, true, repeat(10, 10), w + 2},
		{"a point, other rule", 4, false, repeat(1.2, 20), 0},
		{"a point, other rule, sampled", 4, true, repeat(1.2, 20), w + 8},
		{"lead lost midway", 1, false, append(append(repeat(1.2, w+5), repeat(-2, 2)...), repeat(1.2, 20)...), w + 5 + 2 + 12},
	} {
		if got := evaluations(tc.ch, tc.sampled, tc.leads); got != tc.want {
			t.Errorf("%s: switched at evaluation %d, want %d (0 = never)", tc.name, got, tc.want)
		}
	}
}

// TestAdaptiveRestartsChallengersWhenSampling guards what a large cache's
// challengers are measured from: after a switch, every miniature cache
// holds the new configuration's contents (the real cache keeps the
// contents the old configuration chose, so a lead built on contents it
// never had is one it cannot collect), each still running its own
// configuration; exact miniature caches keep their own contents.
func TestAdaptiveRestartsChallengersWhenSampling(t *testing.T) {
	for _, sampled := range []bool{false, true} {
		s := &miniSims{configs: adaptiveConfigs}
		est := adaptiveFull / 2
		if sampled {
			est = 16 * adaptiveFull
		}
		s.start(est)
		if s.sampled != sampled {
			t.Fatalf("estimate %d: sampled %v, want %v", est, s.sampled, sampled)
		}
		r := rand.New(rand.NewPCG(5, 1))
		n := 4 * s.sims[0].cap
		ref := func() uint32 { return uint32(mix64(uint64(r.IntN(r.IntN(n)+1))) >> 34) }
		for i := 0; s.evals <= adaptiveWarmup; i++ {
			if i > 100*n {
				t.Fatalf("sampled %v: %d evaluations after %d references", sampled, s.evals, i)
			}
			s.observe(ref())
		}
		// A challenger far ahead in this period, having led before.
		ch := (s.cur + 1) % len(s.sims)
		s.refs = s.period - 1
		s.sims[ch].hits += 10 * s.period
		s.sims[ch].streak = adaptiveStreakSampled
		if got := s.observe(ref()); got != ch {
			t.Fatalf("sampled %v: switched to %d, want %d", sampled, got, ch)
		}
		if err := s.check(); err != nil {
			t.Fatal(err)
		}
		same := 0
		for i := range s.sims {
			if i == ch {
				continue
			}
			eq := len(s.sims[i].m) == len(s.sims[ch].m)
			for fp := range s.sims[ch].m {
				if _, ok := s.sims[i].m[fp]; !ok {
					eq = false
					break
				}
			}
			if eq {
				same++
			}
			if sampled && (!eq || s.sims[i].score != s.sims[ch].score || s.sims[i].hits != s.sims[ch].hits) {
				t.Errorf("sampled: miniature cache %d not restarted from %d (same keys %v, score %v vs %v)", i, ch, eq, s.sims[i].score, s.sims[ch].score)
			}
		}
		if !sampled && same == len(s.sims)-1 {
			t.Errorf("exact: every miniature cache holds the new configuration's keys; want their own contents")
		}
	}
}

// shardedRun drives the shard policies ps as an engine does, keys going to
// the shard their hash's low bits pick, each shard holding perShard
// entries; it returns the hit count.
func shardedRun(t *testing.T, ps []Policy, perShard int, keys []uint64) int {
	t.Helper()
	byShard := make([][]uint64, len(ps))
	for _, k := range keys {
		s := mix64(k) & uint64(len(ps)-1)
		byShard[s] = append(byShard[s], k)
	}
	hits := 0
	for s, p := range ps {
		hits += cacheRun(t, p, perShard, byShard[s], nil)
	}
	return hits
}

// TestAdaptiveShardsShareOneDecision guards the engine's shape: the
// policies NewShards builds share one set of miniature caches, whose
// decision every shard applies, and together they beat TinyLFU where
// recency wins as one Adaptive does.
func TestAdaptiveShardsShareOneDecision(t *testing.T) {
	const shards, perShard = 4, 500
	keys := shifting(400_000, 4*1500, 4, 3)
	ps := Adaptive.NewShards(shards, perShard)
	if len(ps) != shards {
		t.Fatalf("NewShards built %d policies, want %d", len(ps), shards)
	}
	g := ps[0].(*adaptivePolicy).group
	for i, p := range ps {
		if p.(*adaptivePolicy).group != g {
			t.Fatalf("shard %d has its own miniature caches", i)
		}
	}
	ha := shardedRun(t, ps, perShard, keys)
	ht := shardedRun(t, TinyLFU.NewShards(shards, perShard), perShard, keys)
	if g.cur.Load() == 0 {
		t.Errorf("shifting working set: the shards never left TinyLFU's configuration")
	}
	for i, p := range ps {
		a := p.(*adaptivePolicy)
		a.Victim(0) // applies the group's latest decision
		if a.applied != int(g.cur.Load()) {
			t.Errorf("shard %d runs configuration %d, the group chose %d", i, a.applied, g.cur.Load())
		}
		if err := a.check(); err != nil {
			t.Errorf("shard %d: %v", i, err)
		}
	}
	if ha < ht+len(keys)/100 {
		t.Errorf("shifting working set over %d shards: Adaptive %d hits, TinyLFU %d: want at least 1 point more", shards, ha, ht)
	}
	t.Logf("hits of %d: adaptive %d, tinylfu %d", len(keys), ha, ht)
}

// TestAdaptiveShardsUnderTheirOwnLocks guards the shared miniature caches'
// locking: the engine calls each shard's policy under that shard's lock
// only, so the shards of one engine run at once (the race detector
// watches), and every shard and the shared state stay consistent.
func TestAdaptiveShardsUnderTheirOwnLocks(t *testing.T) {
	const shards, perShard = 4, 300
	keys := shifting(120_000, 4*600, 2, 5)
	ps := Adaptive.NewShards(shards, perShard)
	byShard := make([][]uint64, shards)
	for _, k := range keys {
		s := mix64(k) & (shards - 1)
		byShard[s] = append(byShard[s], k)
	}
	errs := make(chan error, shards)
	for s := range shards {
		go func() {
			var err error
			_, derr := drive(ps[s], perShard, byShard[s], func(i int) bool {
				if i%499 == 0 {
					err = ps[s].(checker).check()
				}
				return err == nil
			})
			errs <- errors.Join(err, derr)
		}()
	}
	for range shards {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if g := ps[0].(*adaptivePolicy).group; !g.sims.full {
		t.Errorf("the shared miniature caches never filled")
	}
}

// TestAdaptiveMiniatureCachesFillWithTheShard guards the miniature caches'
// start: they are sized from the shard's first entries, not when it is
// half full, so they see the references the shard sees from the start
// and fill (scoring begins) about when the shard does, instead of half a
// fill later.
func TestAdaptiveMiniatureCachesFillWithTheShard(t *testing.T) {
	const capacity = 1000 // within adaptiveFull: every key is sampled
	p := newAdaptive(capacity, newAdaptiveGroup(1, adaptiveConfigs))
	for i := range capacity + capacity/10 {
		p.Add(Handle(i), Entry{Hash: mix64(uint64(i)), Size: 1})
		if i+1 == adaptiveStartEntries && !p.group.sims.ready {
			t.Fatalf("miniature caches not started with %d entries held", i+1)
		}
	}
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
	if !p.group.sims.full {
		t.Errorf("miniature caches not full after %d distinct keys at capacity %d: they hold %d", capacity+capacity/10, capacity, len(p.group.sims.sims[0].m))
	}
}

// TestAdmitCapAdmitsPastAStaleCount guards the capped duel: a candidate
// counted more than admitCap times is admitted even if the victim's count
// (high from a past phase) is higher, and below the cap the duel decides
// as TinyLFU's does.
func TestAdmitCapAdmitsPastAStaleCount(t *testing.T) {
	const candidate, victim = 0x1234567, 0x7654321
	for _, tc := range []struct {
		name       string
		cap        uint32
		candCount  int
		wantAdmits bool
	}{
		{"uncapped duel keeps the frequent victim", 0, 3, false},
		{"capped: count above the cap is admitted", adaptiveCappedCount, adaptiveCappedCount + 1, true},
		{"capped: count at the cap duels", adaptiveCappedCount, adaptiveCappedCount, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTinyLFU(1000)
			p.sk.setPeriod(1 << 20)
			p.sk.ensure(1000)
			p.admitCap = tc.cap
			for range 12 {
				p.sk.increment(victim)
			}
			for range tc.candCount {
				p.sk.increment(candidate)
			}
			if got := p.admit(candidate, victim); got != tc.wantAdmits {
				t.Errorf("admit with counts %d against %d, cap %d = %v, want %v",
					p.sk.frequency(candidate), p.sk.frequency(victim), tc.cap, got, tc.wantAdmits)
			}
		})
	}
}

// TestAdaptiveStartsCappedWhenSampling guards the starting configuration:
// a cache whose miniature caches sample its keys (larger than
// adaptiveFull entries) starts with the capped duel, which the large
// traces favour; one whose miniature caches are exact starts with
// TinyLFU's, and the miniature caches and every shard agree on it.
func TestAdaptiveStartsCappedWhenSampling(t *testing.T) {
	capped := -1
	for i, c := range adaptiveConfigs {
		if !c.seen && c.admitCap > 0 {
			capped = i
			break
		}
	}
	if capped < 0 {
		t.Fatal("no capped configuration in adaptiveConfigs")
	}
	for _, tc := range []struct {
		name     string
		perShard int
		want     int
	}{
		{"exact", adaptiveFull / 4, 0},
		{"sampled", 4 * adaptiveFull, capped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := Adaptive.NewShards(4, int64(tc.perShard))
			keys := make([]uint64, 4*adaptiveStartEntries*8)
			for i := range keys {
				keys[i] = uint64(i)
			}
			shardedRun(t, ps, tc.perShard, keys)
			for s, p := range ps {
				a := p.(*adaptivePolicy)
				if !a.group.sims.ready {
					t.Fatalf("shard %d: miniature caches not started", s)
				}
				a.maintain()
				if got := int(a.group.cur.Load()); got != tc.want {
					t.Fatalf("shard %d: group runs configuration %d, want %d", s, got, tc.want)
				}
				if a.applied != tc.want {
					t.Errorf("shard %d applies configuration %d, want %d", s, a.applied, tc.want)
				}
				if err := a.check(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// pages.copyFrom leaves a copy equal to its source and independent of it,
// whether the destination had more pages than the source, fewer, or none:
// a restart of the miniature caches copies into buffers of any earlier
// size.
func TestPagesCopyFromIsAnIndependentCopy(t *testing.T) {
	fill := func(n int, base uint32) *pages[uint32] {
		var p pages[uint32]
		if n > 0 {
			p.grow(Handle(n - 1))
		}
		for h := range n {
			*p.at(Handle(h)) = base + uint32(h)
		}
		return &p
	}
	for _, tc := range []struct {
		name     string
		dst, src int
	}{
		{"larger destination", 5*pageLen + 7, 2*pageLen + 3},
		{"smaller destination", pageLen / 2, 3*pageLen + 1},
		{"empty destination", 0, pageLen + 1},
		{"empty source", 2 * pageLen, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst, src := fill(tc.dst, 1<<20), fill(tc.src, 0)
			dst.copyFrom(src)
			if got, want := dst.len(), src.len(); got != want {
				t.Fatalf("len %d, want %d", got, want)
			}
			for h := range tc.src {
				*src.at(Handle(h)) = 99 // the copy must not follow
			}
			for h := range tc.src {
				if got, want := *dst.at(Handle(h)), uint32(h); got != want {
					t.Fatalf("element %d = %d, want %d", h, got, want)
				}
			}
			if tc.src > 0 {
				dst.grow(Handle(tc.src)) // grows from the copy's length
				if got := *dst.at(Handle(tc.src)); got != 0 {
					t.Fatalf("grown element = %d, want 0", got)
				}
			}
		})
	}
}

// order lists queue s of p from its most recent end.
func order(p *tinyLFUPolicy, s uint8) []Handle {
	var hs []Handle
	for h := p.q[s].head; h != none; h = p.next(Handle(h), p.nodes.at(Handle(h))) {
		hs = append(hs, Handle(h))
	}
	return hs
}

// TestAdaptiveFillDemotesProtectedOnce guards the first fill of an
// Adaptive shard whose miniature caches are exact: the entries that hits
// protected while everything fit all move to probation when the shard
// first fills its cap (or first evicts, if no Add filled it exactly),
// ahead of the entries never hit and in their order; entries protected
// after that stay protected. TinyLFU, which has no group, and an Adaptive
// cache larger than adaptiveFull entries, whose miniature caches sample,
// keep their protected entries.
func TestAdaptiveFillDemotesProtectedOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int64 // entry size
		capBytes int64
		adaptive bool
		// byVictim: no Add fills the cap exactly (33 entries of 3
		// bytes), so the first Victim demotes.
		byVictim bool
		// keeps: the protected entries stay protected at the fill.
		keeps bool
	}{
		{"adaptive, an Add fills the cap", 1, 100, true, false, false},
		{"adaptive, no Add fills the cap exactly", 3, 100, true, true, false},
		{"tinylfu keeps its protected entries", 1, 100, false, false, true},
		{"adaptive with sampling miniature caches keeps its protected entries", 1, 2 * adaptiveFull, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capBytes := tc.capBytes
			var p *tinyLFUPolicy
			if tc.adaptive {
				p = newAdaptive(capBytes, newAdaptiveGroup(1, adaptiveConfigs)).tinyLFUPolicy
			} else {
				p = newTinyLFU(capBytes)
			}
			n := int(capBytes / tc.size)
			entry := func(i int) Entry { return Entry{Hash: mix64(uint64(i) + 1), Size: tc.size} }
			for i := range n - 1 {
				p.Add(Handle(i), entry(i))
			}
			// Hit every third entry that left the window: probation
			// promotes them to protected.
			for i := 0; i < n-1; i += 3 {
				if p.seg(Handle(i)) == segProbation {
					p.Access(Handle(i))
				}
			}
			protected, oldProb := order(p, segProtected), order(p, segProbation)
			if len(protected) < 5 {
				t.Fatalf("%d protected entries before the fill, want some", len(protected))
			}
			p.Add(Handle(n-1), entry(n-1))
			if tc.byVictim {
				if got := p.q[segProtected].n; got != len(protected) {
					t.Fatalf("%d protected entries after an Add that did not fill the cap, want %d", got, len(protected))
				}
				p.Miss(mix64(uint64(n) + 1))
				v, ok := p.Victim(0)
				if !ok {
					t.Fatal("no victim in a full shard")
				}
				p.Remove(v)
			}
			if tc.adaptive && p.group.sampling() != tc.keeps {
				t.Fatalf("miniature caches sampling: %v at %d entries, want %v", p.group.sampling(), n, tc.keeps)
			}
			if tc.keeps {
				if got := p.q[segProtected].n; got != len(protected) {
					t.Fatalf("%d protected entries after the fill, want %d", got, len(protected))
				}
				if err := p.check(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got := p.q[segProtected].n; got != 0 {
				t.Fatalf("%d protected entries after the fill, want 0", got)
			}
			// The demoted entries are in probation, in the order they
			// had, ahead of the entries that were there before the fill.
			at := map[Handle]int{}
			prob := order(p, segProbation)
			for i, h := range prob {
				at[h] = i
			}
			last := -1
			for _, h := range protected {
				i, ok := at[h]
				if !ok {
					if tc.byVictim && !p.tracked(h) {
						continue // the first victim
					}
					t.Fatalf("demoted entry %d in segment %d, want probation", h, p.seg(h))
				}
				if i <= last {
					t.Fatalf("probation %v does not keep the demoted entries' order %v", prob, protected)
				}
				last = i
			}
			for _, h := range oldProb {
				if i, ok := at[h]; ok && i < last {
					t.Fatalf("probation %v: entry %d, never hit, is ahead of a demoted one (%v)", prob, h, protected)
				}
			}
			if err := p.check(); err != nil {
				t.Fatal(err)
			}
			// Once filled, a hit protects again, and later fills and
			// evictions leave it protected.
			h := protected[0]
			p.Access(h)
			for i := range 3 {
				p.Miss(mix64(uint64(n+10+i) + 1))
				v, ok := p.Victim(0)
				if !ok {
					t.Fatal("no victim in a full shard")
				}
				p.Remove(v)
				p.Add(v, entry(n+10+i))
			}
			if p.seg(h) != segProtected {
				t.Fatalf("entry %d, hit after the fill, is in segment %d, want protected", h, p.seg(h))
			}
			if err := p.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAdaptiveIgnoresReadsBeforeHalfFull guards coldRead: an Adaptive
// shard whose miniature caches are exact applies no read hit (no
// promotion, no reordering) until it is half full, as Caffeine and otter
// do, though its miniature caches still see the reference; once half
// full it applies them, and TinyLFU and an Adaptive cache whose miniature
// caches sample always do.
func TestAdaptiveIgnoresReadsBeforeHalfFull(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capBytes int64
		adaptive bool
		held     int    // entries added before the hit
		hit      Handle // the entry hit, in probation
		want     bool   // the hit promotes it to protected
	}{
		{"adaptive, exact, under half full", 100, true, 40, 35, false},
		{"adaptive, exact, half full", 100, true, 60, 55, true},
		{"adaptive, sampling, under half full", 2 * adaptiveFull, true, 100, 0, true},
		{"tinylfu, under half full", 100, false, 40, 35, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *tinyLFUPolicy
			if tc.adaptive {
				p = newAdaptive(tc.capBytes, newAdaptiveGroup(1, adaptiveConfigs)).tinyLFUPolicy
			} else {
				p = newTinyLFU(tc.capBytes)
			}
			for i := range tc.held {
				p.Add(Handle(i), Entry{Hash: mix64(uint64(i) + 1), Size: 1})
			}
			h := tc.hit
			if p.seg(h) != segProbation {
				t.Fatalf("entry %d in segment %d before the hit, want probation", h, p.seg(h))
			}
			if tc.adaptive && !p.group.sims.ready {
				t.Fatalf("miniature caches not started with %d entries", tc.held)
			}
			p.Access(h)
			if got := p.seg(h) == segProtected; got != tc.want {
				t.Errorf("hit with %d of %d entries held: promoted %v, want %v", tc.held, tc.capBytes, got, tc.want)
			}
			if tc.adaptive && p.group.exact() {
				// The miniature caches, which apply every read, saw it.
				g := &p.group.sims.sims[0]
				if mh, ok := g.m[p.fp(h)]; !ok || g.p.seg(mh) != segProtected {
					t.Errorf("miniature cache: entry %x held %v, in segment %d, want protected", p.fp(h), ok, g.p.seg(mh))
				}
			}
			if err := p.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAdaptiveGrownWindowKeepsTies: after an exact Adaptive policy
// switches to a larger window, the window's oldest entry keeps its place
// when it ties main's victim in the frequency duel (the window is below
// its share, so it was not going to leave it), and main's victim goes;
// with a full window, a seen-twice rule or sampling miniature caches, a
// tie still evicts the window's entry.
func TestAdaptiveGrownWindowKeepsTies(t *testing.T) {
	seen := -1
	for i, c := range adaptiveConfigs {
		if c.seen {
			seen = i
			break
		}
	}
	for _, tc := range []struct {
		name     string
		capBytes int64
		size     int64 // each entry's
		to       int   // the configuration switched to, -1 for none
		wantMain bool  // the tie evicts main's victim, not the window's entry
	}{
		{"exact, grown window", 100, 1, 3, true},
		{"exact, full window", 100, 1, -1, false},
		// 116 entries of 6 bytes: the window of 7 bytes holds one and is
		// full, though 1 byte short of its share.
		{"exact, full window short of its share by under an entry", 700, 6, -1, false},
		{"exact, grown window, seen-twice rule", 100, 1, seen, false},
		{"sampling, grown window", 2 * adaptiveFull, 1, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newAdaptive(tc.capBytes, newAdaptiveGroup(1, adaptiveConfigs)).tinyLFUPolicy
			n := int(tc.capBytes / tc.size)
			for i := range n {
				hash := mix64(uint64(i) + 1)
				p.Miss(hash)
				p.Add(Handle(i), Entry{Hash: hash, Size: tc.size})
			}
			if tc.to >= 0 {
				g := p.group
				g.mu.Lock()
				g.sims.cur = tc.to
				g.cur.Store(int32(tc.to))
				g.mu.Unlock()
			}
			p.filled = true // no demotion pass: the segments stay as they are
			p.maintain()
			if grown := p.q[segWindow].bytes+tc.size <= p.windowMax; grown != (tc.to >= 0) {
				t.Fatalf("window %d of %d after the switch to %d", p.q[segWindow].bytes, p.windowMax, tc.to)
			}
			w, v := Handle(p.q[segWindow].tail), Handle(p.q[segProbation].tail)
			for p.sk.frequency(p.fp(v)) < p.sk.frequency(p.fp(w)) {
				p.sk.increment(p.fp(v)) // the first entries came before the sketch counted
			}
			if fw, fv := p.sk.frequency(p.fp(w)), p.sk.frequency(p.fp(v)); fw != fv {
				t.Fatalf("window entry counted %d, main's victim %d: not a tie", fw, fv)
			}
			got, ok := p.Victim(0)
			want := w
			if tc.wantMain {
				want = v
			}
			if !ok || got != want {
				t.Errorf("Victim = %d, %v; want %d (window's oldest %d, main's victim %d)", got, ok, want, w, v)
			}
			if err := p.group.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
