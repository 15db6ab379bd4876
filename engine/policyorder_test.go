package engine

import (
	"fmt"
	"slices"
	"strconv"
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

// A write's policy update is made before the write returns (a write may
// leave it until its lock is released, but not later), and in the order
// of the writes: the policy never misses or reorders a write.
func TestEveryWriteReachesThePolicyBeforeItReturns(t *testing.T) {
	var pols []*recordingPolicy
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: recordingSpec(&pols)})
	p := pols[0]
	steps := []struct {
		op   func()
		want string
	}{
		{func() { e.Set("a", []byte("1")) }, "add 0"},
		{func() { e.Set("b", []byte("1")) }, "add 1"},
		{func() { e.Set("a", []byte("2")) }, "update 0"},              // in place
		{func() { e.Set("a", []byte("a longer value")) }, "update 0"}, // a new record
		{func() { e.Incr("n") }, "add 2"},
		{func() { e.Incr("n") }, "update 2"},
		{func() { e.Delete("a") }, "remove 0"},
		{func() { e.Set("b", []byte("3")) }, "update 1"},
		{func() { e.Delete("b") }, "remove 1"},
	}
	for i, st := range steps {
		st.op()
		if got := p.last(); got != st.want {
			t.Fatalf("step %d: the policy's last call is %q, want %q", i, got, st.want)
		}
	}
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
	s, h := e.shardFor("k")
	s.mu.Lock()
	slot, ok := s.findLocked("k", h)
	if !ok {
		s.mu.Unlock()
		t.Fatal("k not found")
	}
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

// Every read hit and miss reaches the policy, even in a long run of reads
// with no write to drain the read log: a reader that finds its log stripe
// full drains the log itself. Lock-free reads (Get, View), reads under
// the shared lock (GetItem, a key with a TTL) and misses are all counted.
// One goroutine, so no event may be lost to a contended slot or lock.
func TestEveryReadOfALongReadRunReachesThePolicy(t *testing.T) {
	var pols []*recordingPolicy
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: recordingSpec(&pols)})
	const n = 300
	for i := range n {
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
	e.shards[0].drainIfFree()
	acc0, miss0 := pols[0].reads()
	hits, misses := 0, 0
	for round := range 5 {
		for i := range n + n/10 {
			k := fmt.Sprintf("k%d", i) // i >= n: absent
			var ok bool
			switch (i + round) % 3 {
			case 0:
				_, ok = e.Get(k)
			case 1:
				_, ok = e.GetItem(k)
			default:
				ok = e.View(k, func([]byte) {})
			}
			if ok != (i < n) {
				t.Fatalf("read of %s: found %v, want %v", k, ok, i < n)
			}
			if ok {
				hits++
			} else {
				misses++
			}
		}
	}
	e.shards[0].drainIfFree()
	acc, miss := pols[0].reads()
	if acc-acc0 != hits || miss-miss0 != misses {
		t.Fatalf("the policy saw %d accesses and %d misses, want %d and %d", acc-acc0, miss-miss0, hits, misses)
	}
}
