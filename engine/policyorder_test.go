package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

// recordingPolicy wraps a policy, records its mutating calls (Add,
// Update, Remove, Victim) and counts its read calls (Access, Miss). The
// engine makes every call under a shard's exclusive lock: a call that
// finds another in progress is reported as concurrent.
type recordingPolicy struct {
	evict.Policy
	busy             sync.Mutex // held for the length of each call
	mu               sync.Mutex // guards calls, concurrent, accesses and misses
	calls            []string
	concurrent       int
	accesses, misses int
}

// enter records a call; it returns a function that ends it (held while
// the wrapped policy runs, so that an overlapping call is seen).
func (p *recordingPolicy) enter(call string, h evict.Handle) (exit func()) {
	ok := p.busy.TryLock()
	p.mu.Lock()
	switch call {
	case "access":
		p.accesses++
	case "miss":
		p.misses++
	default:
		p.calls = append(p.calls, call+" "+strconv.Itoa(int(h)))
	}
	if !ok {
		p.concurrent++
	}
	p.mu.Unlock()
	if !ok {
		return func() {}
	}
	return p.busy.Unlock
}

func (p *recordingPolicy) Access(h evict.Handle) {
	defer p.enter("access", h)()
	p.Policy.Access(h)
}

func (p *recordingPolicy) Miss(hash uint64) {
	defer p.enter("miss", 0)()
	p.Policy.Miss(hash)
}

// reads returns the Access and Miss calls counted so far.
func (p *recordingPolicy) reads() (accesses, misses int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accesses, p.misses
}

func (p *recordingPolicy) Add(h evict.Handle, e evict.Entry) {
	defer p.enter("add", h)()
	p.Policy.Add(h, e)
}

func (p *recordingPolicy) Update(h evict.Handle, e evict.Entry) {
	defer p.enter("update", h)()
	p.Policy.Update(h, e)
}

func (p *recordingPolicy) Remove(h evict.Handle) {
	defer p.enter("remove", h)()
	p.Policy.Remove(h)
}

func (p *recordingPolicy) Victim(now int64) (evict.Handle, bool) {
	defer p.enter("victim", 0)()
	return p.Policy.Victim(now)
}

// made returns the number of calls recorded (Access and Miss are counted
// apart, see reads).
func (p *recordingPolicy) made() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

func (p *recordingPolicy) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.calls) == 0 {
		return ""
	}
	return p.calls[len(p.calls)-1]
}

func recordingSpec(pols *[]*recordingPolicy) evict.Spec {
	return evict.Spec{Name: "recording", New: func(shardBytes int64) evict.Policy {
		p := &recordingPolicy{Policy: evict.TinyLFU.New(shardBytes)}
		*pols = append(*pols, p)
		return p
	}}
}

// crowdWithPinned fills e (one shard) with pinned entries, which no policy
// tracks, until less than a sixteenth of max is free, so that the shard is
// not calm (see readlog.go), and drains its read log so that it knows.
// It returns the number of entries written (they hold the first slots).
func crowdWithPinned(t *testing.T, e *Engine, max int64) int {
	t.Helper()
	n := 0
	for ; e.Stats().Bytes < max-max/16; n++ {
		if _, _, err := e.SetWith(fmt.Sprintf("pinned%d", n), make([]byte, 256), SetOptions{TTL: NoTTL, Pin: true}); err != nil {
			t.Fatal(err)
		}
	}
	e.shards[0].drainIfFree()
	return n
}

// A write's policy update is made before the write returns (a write may
// leave it until its lock is released, but not later), and in the order
// of the writes: in an engine within an eighth of its cap, the policy
// never misses or reorders a write.
func TestEveryWriteReachesThePolicyBeforeItReturns(t *testing.T) {
	var pols []*recordingPolicy
	const max = 64 << 10
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: max, Policy: recordingSpec(&pols)})
	base := crowdWithPinned(t, e, max)
	call := func(op string, slot int) string { return fmt.Sprintf("%s %d", op, base+slot) }
	p := pols[0]
	steps := []policyStep{
		{func() { e.Set("a", []byte("1")) }, call("add", 0)},
		{func() { e.Set("b", []byte("1")) }, call("add", 1)},
		{func() { e.Set("a", []byte("2")) }, call("update", 0)},              // in place
		{func() { e.Set("a", []byte("a longer value")) }, call("update", 0)}, // a new record
		{func() { e.Incr("n") }, call("add", 2)},
		{func() { e.Incr("n") }, call("update", 2)},
		{func() { e.Delete("a") }, call("remove", 0)},
		{func() { e.Set("b", []byte("3")) }, call("update", 1)},
		{func() { e.Delete("b") }, call("remove", 1)},
	}
	runPolicySteps(t, p, "", steps)
	mustCheck(t, e)
}

// policyStep is an operation and the policy call it must make last.
type policyStep struct {
	op   func()
	want string
}

// runPolicySteps runs steps in order and requires each to make at least
// one policy call, the last being its want.
func runPolicySteps(t *testing.T, p *recordingPolicy, label string, steps []policyStep) {
	t.Helper()
	for i, st := range steps {
		n := p.made()
		st.op()
		if got := p.last(); p.made() == n || got != st.want {
			t.Fatalf("%sstep %d: the policy's last call is %q (%d new calls), want a new %q", label, i, got, p.made()-n, st.want)
		}
	}
}

// A shard that is only overwritten (sizes and deadlines kept) is not
// filling: a pass of overwrites makes it calm, as a pass of reads does,
// and a write that grows it ends the calm at the next drain.
func TestAShardOnlyOverwrittenBecomesCalm(t *testing.T) {
	var pols []*recordingPolicy
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: recordingSpec(&pols)})
	s := &e.shards[0]
	const n = 100
	for i := range n {
		e.Set(fmt.Sprintf("k%d", i), []byte("v1"))
	}
	s.drainIfFree() // sees the growth
	if got := s.sample.Load(); got != 0 {
		t.Fatalf("after the fill: sample mask %d, want 0 (filling)", got)
	}
	for i := range n {
		e.Set(fmt.Sprintf("k%d", i), []byte("v2"))
	}
	s.drainIfFree()
	if got := s.sample.Load(); got != calmSample-1 {
		t.Fatalf("after a pass of overwrites: sample mask %d, want %d (calm)", got, calmSample-1)
	}
	if got := e.Stats().CalmShards; got != 1 {
		t.Fatalf("Stats().CalmShards = %d, want 1", got)
	}
	e.Set("new", []byte("v"))
	s.drainIfFree()
	if got := s.sample.Load(); got != 0 {
		t.Fatalf("after a write that grew the shard: sample mask %d, want 0", got)
	}
	if got := e.Stats().CalmShards; got != 0 {
		t.Fatalf("after growth: Stats().CalmShards = %d, want 0", got)
	}
}

// A calm engine hands the policy the overwrites that keep an entry's size
// and deadline of one exclusive lock in calmSample, and every write that
// adds, resizes, retimes or removes an entry.
func TestACalmEngineSamplesSameSizeOverwrites(t *testing.T) {
	var pols []*recordingPolicy
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: recordingSpec(&pols)})
	p := pols[0]
	e.Set("a", []byte("1"))
	settleCalm(t, e, []string{"a"})
	updates := func() (n int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.calls {
			if strings.HasPrefix(c, "update") {
				n++
			}
		}
		return n
	}
	const writes = 20 * calmSample
	u0 := updates()
	for i := range writes {
		e.Set("a", []byte{byte('0' + i%10)})
	}
	// calmPick picks between 18 and 21 of any 320 consecutive counts.
	if got, want := updates()-u0, writes/calmSample; got < want-2 || got > want+2 {
		t.Fatalf("calm: %d same-size overwrites made %d policy updates, want %d±2", writes, got, want)
	}
	runPolicySteps(t, p, "calm, ", []policyStep{
		{func() { e.Set("a", []byte("a longer value")) }, "update 0"},
		{func() { e.SetTTL("a", []byte("a longer value"), time.Hour) }, "update 0"}, // a deadline
		{func() { e.SetTTL("a", []byte("a longer value"), 2*time.Hour) }, "update 0"},
		{func() { e.Set("b", []byte("1")) }, "add 1"},
		{func() { e.Delete("a") }, "remove 0"},
	})
	mustCheck(t, e)
}

// Writers and readers of one shard never make the policy's calls run
// concurrently — deferred updates, logged reads drained by writers and by
// readers that find their log stripe full, and reads under the shared
// lock (GetItem) included — and leave the policy consistent with the
// entries (Check). The wrapped TinyLFU has no synchronization of its own,
// so under -race an overlap is also a reported race.
func TestPolicyCallsStaySerialUnderConcurrentWrites(t *testing.T) {
	var pols []*recordingPolicy
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 24 << 10, Policy: recordingSpec(&pols)})
	iters := 3000
	if raceEnabled {
		iters = 800
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				k := fmt.Sprintf("k%d", (i*7+w)%300)
				switch i % 5 {
				case 0:
					e.Delete(k)
				case 1:
					e.Incr("counter" + strconv.Itoa(w))
				default:
					if _, err := e.Set(k, make([]byte, 50+i%120)); err != nil {
						t.Error(err)
						return
					}
				}
				e.Get(fmt.Sprintf("k%d", i%300))
			}
		}()
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 * iters {
				k := fmt.Sprintf("k%d", (i*13+r)%350) // some absent: misses
				if i%3 == 0 {
					e.GetItem(k)
				} else {
					e.Get(k)
				}
			}
		}()
	}
	wg.Wait()
	if acc, miss := pols[0].reads(); acc == 0 || miss == 0 {
		t.Fatalf("the policy saw %d accesses and %d misses: the test does not exercise logged reads", acc, miss)
	}
	if n := pols[0].concurrent; n != 0 {
		t.Fatalf("%d policy calls ran while another was in progress", n)
	}
	if st := e.Stats(); st.Evicted == 0 {
		t.Fatalf("no eviction ran: the test does not exercise victims (stats %+v)", st)
	}
	mustCheck(t, e)
}

// deadlineRecorder records the order of a deadline-ordered policy's
// Update and SetDeadline calls.
type deadlineRecorder struct {
	evict.Policy
	calls []string
}

func (p *deadlineRecorder) Update(h evict.Handle, e evict.Entry) {
	p.calls = append(p.calls, fmt.Sprintf("update %d deadline %d", h, e.Deadline))
	p.Policy.Update(h, e)
}

func (p *deadlineRecorder) SetDeadline(h evict.Handle, d int64) {
	p.calls = append(p.calls, fmt.Sprintf("setdeadline %d %d", h, d))
	p.Policy.(evict.DeadlineSetter).SetDeadline(h, d)
}

// A write's deferred policy Update reaches the policy before any later
// policy call of the same lock hold, SetDeadline included: a
// deadline-ordered policy told a new deadline and then the write's stale
// one would order the entry by the stale one.
func TestDeferredUpdatePrecedesALaterDeadlineChange(t *testing.T) {
	var p *deadlineRecorder
	spec := evict.Spec{Name: "deadline-recorder", Volatile: true, New: func(n int64) evict.Policy {
		p = &deadlineRecorder{Policy: evict.VolatileTTL.New(n)}
		return p
	}}
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: spec})
	if _, err := e.SetTTL("k", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	s, h, slot := lockSlot(t, e, "k")
	en := s.at(slot)
	d1 := en.deadline()
	p.calls = nil
	s.deferUpdate = true // as a single-key write leaves it
	s.syncPolicyLocked(en, h, en.size(), true)
	s.deferUpdate = false
	s.setDeadlineLocked(en, d1+1)
	calls := slices.Clone(p.calls)
	s.mu.Unlock()
	want := []string{
		fmt.Sprintf("update %d deadline %d", slot, d1),
		fmt.Sprintf("setdeadline %d %d", slot, d1+1),
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("policy calls under the lock: %q, want %q", calls, want)
	}
}

// longReadRunKeys is how many keys fillLongReadRun writes.
const longReadRunKeys = 300

// fillLongReadRun writes longReadRunKeys keys (one in ten with a TTL) and
// returns their accounted bytes.
func fillLongReadRun(t *testing.T, e *Engine) int64 {
	t.Helper()
	for i := range longReadRunKeys {
		var err error
		if i%10 == 0 {
			_, err = e.SetTTL(fmt.Sprintf("k%d", i), []byte("v"), time.Hour)
		} else {
			_, err = e.Set(fmt.Sprintf("k%d", i), []byte("v"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return e.Stats().Bytes
}

// longReadRun reads every key written by fillLongReadRun and a tenth as
// many absent ones, five times, by Get, GetItem (under the shared lock)
// and View in turn, on one goroutine, and returns the policy's new accesses
// and misses, and the hits and misses the reads found.
func longReadRun(t *testing.T, e *Engine, pol *recordingPolicy) (acc, miss, hits, misses int) {
	t.Helper()
	e.shards[0].drainIfFree()
	acc0, miss0 := pol.reads()
	for round := range 5 {
		for i := range longReadRunKeys + longReadRunKeys/10 {
			k := fmt.Sprintf("k%d", i) // i >= longReadRunKeys: absent
			var ok bool
			switch (i + round) % 3 {
			case 0:
				_, ok = e.Get(k)
			case 1:
				_, ok = e.GetItem(k)
			default:
				ok = e.View(k, func([]byte) {})
			}
			if ok != (i < longReadRunKeys) {
				t.Fatalf("read of %s: found %v, want %v", k, ok, i < longReadRunKeys)
			}
			if ok {
				hits++
			} else {
				misses++
			}
		}
	}
	e.shards[0].drainIfFree()
	acc, miss = pol.reads()
	return acc - acc0, miss - miss0, hits, misses
}

// In an engine within an eighth of its cap, every read hit and miss
// reaches the policy, even in a long run of reads with no write to drain
// the read log: a reader that finds its log stripe full drains the log
// itself. Lock-free reads (Get, View), reads under the shared lock
// (GetItem, a key with a TTL) and misses are all counted. One goroutine,
// so no event may be lost to a contended slot or lock.
func TestEveryReadOfALongReadRunReachesThePolicy(t *testing.T) {
	probe, _ := newTest(t, Config{Shards: 1})
	full := fillLongReadRun(t, probe)
	var pols []*recordingPolicy
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: full, Policy: recordingSpec(&pols)})
	if got := fillLongReadRun(t, e); got != full {
		t.Fatalf("the capped engine holds %d bytes, want %d", got, full)
	}
	acc, miss, hits, misses := longReadRun(t, e, pols[0])
	if acc != hits || miss != misses {
		t.Fatalf("the policy saw %d accesses and %d misses, want %d and %d", acc, miss, hits, misses)
	}
}

// settleCalm ends a one-shard engine's growth: it drains the read log (the
// drain sees the writes' growth), then reads the keys of keys, pass after
// pass, until it has made more hits than the shard holds entries, and
// drains again. Afterwards the shard is calm if the engine has room (see
// readlog.go).
func settleCalm(t *testing.T, e *Engine, keys []string) {
	t.Helper()
	e.shards[0].drainIfFree()
	for range 2 + e.Stats().Entries/len(keys) {
		for _, k := range keys {
			if !e.View(k, func([]byte) {}) {
				t.Fatalf("%s is missing", k)
			}
		}
	}
	e.shards[0].drainIfFree()
}

// A calm shard (more than an eighth of the engine's cap free, and as many
// hits handed to the policy as it holds entries since it last grew) hands
// the policy one read hit in calmSample, and one miss in calmSample; a
// shard that grows, or an engine within an eighth of its cap, every hit and
// miss.
func TestACalmEngineLogsOneHitInCalmSample(t *testing.T) {
	probe, _ := newTest(t, Config{Shards: 1})
	full := fillLongReadRun(t, probe)
	var pols []*recordingPolicy
	max := 2 * full
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: max, Policy: recordingSpec(&pols)})
	p := pols[0]
	fillLongReadRun(t, e)
	var keys []string
	for i := range longReadRunKeys {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	settleCalm(t, e, keys)
	acc, miss, hits, misses := longReadRun(t, e, p)
	// Get, GetItem and View may count their hits in different stripes of
	// the hit counter (the stripe follows the stack depth), each logging
	// one hit in calmSample of its own, give or take 2 (calmPick's
	// spread over a run of consecutive counts).
	if lo, hi := hits/calmSample-6, hits/calmSample+6; acc < lo || acc > hi {
		t.Fatalf("calm: the policy saw %d accesses of %d hits, want %d..%d", acc, hits, lo, hi)
	}
	if lo, hi := misses/calmSample-6, misses/calmSample+6; miss < lo || miss > hi {
		t.Fatalf("calm: the policy saw %d misses of %d, want %d..%d", miss, misses, lo, hi)
	}

	// Filling, with room to spare: a new key every 4 reads, so that every
	// drain sees the shard grown since the last.
	for i := range 20 {
		e.Set(fmt.Sprintf("new%d", i), []byte("v"))
	}
	e.shards[0].drainIfFree()
	acc0, _ := p.reads()
	hits = 0
	for i := range 400 {
		if i%4 == 0 {
			if _, err := e.Set(fmt.Sprintf("grow%d", i), []byte("v")); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !e.View(fmt.Sprintf("k%d", i%longReadRunKeys), func([]byte) {}) {
			t.Fatalf("k%d is missing", i%longReadRunKeys)
		}
		hits++
	}
	e.shards[0].drainIfFree()
	if acc, _ := p.reads(); acc-acc0 != hits {
		t.Fatalf("filling: the policy saw %d accesses, want %d", acc-acc0, hits)
	}
	if e.Stats().Bytes > max-max/8 {
		t.Fatalf("the filling phase took the engine within an eighth of its cap (%d of %d bytes)", e.Stats().Bytes, max)
	}

	// Within an eighth of the cap, grown no more: every hit.
	for i := 0; e.Stats().Bytes <= max-max/8; i++ {
		if _, err := e.Set(fmt.Sprintf("pad%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	settleCalm(t, e, keys)
	acc, miss, hits, misses = longReadRun(t, e, p)
	if acc != hits || miss != misses {
		t.Fatalf("near the cap: the policy saw %d accesses and %d misses, want %d and %d", acc, miss, hits, misses)
	}
}

// A calm shard's sample follows no period of the reads: a goroutine that
// reads a fixed cycle of keys (a loop over calmSample keys, as a request
// handler or a benchmark makes) still hands the policy reads of every key
// of the cycle, so that the keys it reads most are not the policy's first
// victims. Under LRU, keys read once before the cycle must be evicted
// before any key of the cycle.
func TestACalmShardSamplesEveryKeyOfAReadCycle(t *testing.T) {
	const hot, cold, value = calmSample, 64, 100
	entry := int64(EntryOverhead + 3 + value) // keys of 3 bytes
	max := 2 * (hot + cold) * entry
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: max, Policy: evict.AllKeysLRU})
	var hots, all []string
	for i := range hot {
		hots = append(hots, fmt.Sprintf("h%02d", i))
	}
	all = append(all, hots...)
	for i := range cold {
		all = append(all, fmt.Sprintf("c%02d", i))
	}
	for _, k := range all {
		if _, err := e.Set(k, make([]byte, value)); err != nil {
			t.Fatal(err)
		}
	}
	settleCalm(t, e, all) // the cold keys are read last
	if got := e.shards[0].sample.Load(); got != calmSample-1 {
		t.Fatalf("the shard is not calm (sample mask %d)", got)
	}
	for range 200 {
		for _, k := range hots {
			if !e.View(k, func([]byte) {}) {
				t.Fatalf("%s is missing", k)
			}
		}
	}
	e.shards[0].drainIfFree()
	for i := 0; e.Stats().Evicted < cold; i++ {
		if _, err := e.Set(fmt.Sprintf("n%02d", i), make([]byte, value)); err != nil {
			t.Fatal(err)
		}
	}
	var lost []string
	for _, k := range hots {
		if _, ok := e.GetItem(k); !ok {
			lost = append(lost, k)
		}
	}
	if len(lost) != 0 {
		t.Fatalf("after %d evictions, %d of the %d keys read 200 times each were evicted before keys read once: %v", cold, len(lost), hot, lost)
	}
	mustCheck(t, e)
}

// A calm shard's sample of same-size overwrites follows no period of the
// writes either: writes that alternate between two keys hand the policy
// overwrites of both, about one in calmSample of each.
func TestACalmShardSamplesOverwritesOfEveryKeyOfACycle(t *testing.T) {
	var pols []*recordingPolicy
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: recordingSpec(&pols)})
	p := pols[0]
	keys := []string{"a", "b"}
	for _, k := range keys {
		e.Set(k, []byte("0"))
	}
	settleCalm(t, e, keys)
	if got := e.shards[0].sample.Load(); got != calmSample-1 {
		t.Fatalf("the shard is not calm (sample mask %d)", got)
	}
	n0 := p.made()
	const rounds = 20 * calmSample
	for i := range rounds {
		for _, k := range keys {
			e.Set(k, []byte{byte('0' + i%10)})
		}
	}
	p.mu.Lock()
	updates := map[string]int{}
	for _, c := range p.calls[n0:] {
		updates[c]++
	}
	p.mu.Unlock()
	for slot := range keys {
		if got := updates[fmt.Sprintf("update %d", slot)]; got < rounds/calmSample/3 {
			t.Errorf("calm: %d same-size overwrites of %s made %d policy updates, want about %d", rounds, keys[slot], got, rounds/calmSample)
		}
	}
}

// A shard that evicts is not calm from its next drain, even if the engine
// keeps more than an eighth of its cap free: with entries larger than an
// eighth of the cap, every write of a new key evicts while that much is
// free, and an eviction that takes out as many bytes as the write adds
// leaves the shard no larger than before (keys of one length). The victims of such a shard are
// chosen knowing every read.
func TestAShardThatEvictsIsNotCalm(t *testing.T) {
	var pols []*recordingPolicy
	const max = 100 << 10
	value := make([]byte, max/5) // an entry holds more than an eighth of max
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: max, Policy: recordingSpec(&pols)})
	p := pols[0]
	keys := []string{"a", "b", "c", "d"}
	for _, k := range keys {
		if _, err := e.Set(k, value); err != nil {
			t.Fatal(err)
		}
	}
	settleCalm(t, e, keys)
	if got := e.shards[0].sample.Load(); got != calmSample-1 {
		t.Fatalf("the shard is not calm before it evicts (sample mask %d)", got)
	}
	for i := range 3 {
		if _, err := e.Set(string(rune('e'+i)), value); err != nil {
			t.Fatal(err)
		}
		if got := e.Stats().Evicted; got != uint64(i+1) {
			t.Fatalf("after %d new keys, %d evictions, want %d", i+1, got, i+1)
		}
		e.shards[0].drainIfFree()
		if got := e.shards[0].sample.Load(); got != 0 {
			t.Fatalf("after eviction %d, with %d of %d bytes used, the shard is calm (sample mask %d)", i+1, e.Stats().Bytes, max, got)
		}
		acc0, _ := p.reads()
		const reads = 10
		for range reads {
			if !e.View(string(rune('e'+i)), func([]byte) {}) {
				t.Fatalf("%c is missing", 'e'+i)
			}
		}
		e.shards[0].drainIfFree()
		if acc, _ := p.reads(); acc-acc0 != reads {
			t.Fatalf("after eviction %d: the policy saw %d of %d hits", i+1, acc-acc0, reads)
		}
	}
	mustCheck(t, e)
}

// Readers racing a writer that takes the engine in and out of calm (it
// fills the engine to within an eighth of its cap, then deletes back)
// count every hit and miss exactly, never read a value they did not write,
// and leave the policy consistent with the shards (Check), whichever
// sample mask each read saw.
func TestReadersRacingCalmChangesCountExactly(t *testing.T) {
	const max = 64 << 10
	e, _ := newTest(t, Config{Shards: 2, MaxBytes: max, Policy: evict.TinyLFU})
	var keys []string
	for i := range 64 {
		k := fmt.Sprintf("k%02d", i)
		keys = append(keys, k)
		if _, err := e.Set(k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range e.shards {
		e.shards[i].drainIfFree()
	}
	const readers, each = 3, 4000
	done := make(chan struct{})
	var wg sync.WaitGroup
	var bad []string
	var badMu sync.Mutex
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := keys[(i*7+r)%len(keys)]
				if i%5 == 0 {
					k = "absent"
				}
				v, ok := e.Get(k)
				if ok != (k != "absent") || ok && string(v) != k {
					badMu.Lock()
					bad = append(bad, fmt.Sprintf("%s: %q, %v", k, v, ok))
					badMu.Unlock()
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	calm := map[uint32]bool{}
	own := 0 // the writer's own hits
	finished := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	for round := 0; round < 3 || !finished(); round++ {
		for i := 0; e.Stats().Bytes < max-max/16; i++ {
			if _, err := e.Set(fmt.Sprintf("fill%d", i), make([]byte, 200)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range e.shards {
			e.shards[i].drainIfFree()
			calm[e.shards[i].sample.Load()] = true
		}
		for i := 0; i < max/200; i++ {
			e.Delete(fmt.Sprintf("fill%d", i))
		}
		// Drain (the shards see they did not grow), then a full pass
		// of hits, logged, so that the next drain finds them calm.
		for i := range e.shards {
			e.shards[i].drainIfFree()
		}
		for range 2 {
			for _, k := range keys {
				if _, ok := e.Get(k); ok {
					own++
				}
			}
		}
		for i := range e.shards {
			e.shards[i].drainIfFree()
			calm[e.shards[i].sample.Load()] = true
		}
	}
	if len(bad) != 0 {
		t.Fatalf("%d bad reads, first %s", len(bad), bad[0])
	}
	st := e.Stats()
	wantM := uint64(readers * each / 5)
	if wantH := readers*each - wantM + uint64(own); st.Hits != wantH || st.Misses != wantM {
		t.Fatalf("hits, misses = %d, %d, want %d, %d", st.Hits, st.Misses, wantH, wantM)
	}
	if !calm[0] || !calm[calmSample-1] {
		t.Fatalf("the shards' sample masks seen were %v, want both 0 and %d", calm, calmSample-1)
	}
	mustCheck(t, e)
}
