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

// recordingPolicy wraps a policy and records its mutating calls (Add,
// Update, Remove, Victim), which the engine makes under a shard's
// exclusive lock only: a call that finds another in progress is reported
// as concurrent.
type recordingPolicy struct {
	evict.Policy
	busy       sync.Mutex // held for the length of each mutating call
	mu         sync.Mutex // guards calls and concurrent
	calls      []string
	concurrent int
}

func (p *recordingPolicy) enter(call string, h evict.Handle) {
	ok := p.busy.TryLock()
	p.mu.Lock()
	p.calls = append(p.calls, call+" "+strconv.Itoa(int(h)))
	if !ok {
		p.concurrent++
	}
	p.mu.Unlock()
	if ok {
		p.busy.Unlock()
	}
}

func (p *recordingPolicy) Add(h evict.Handle, e evict.Entry) {
	p.enter("add", h)
	p.Policy.Add(h, e)
}

func (p *recordingPolicy) Update(h evict.Handle, e evict.Entry) {
	p.enter("update", h)
	p.Policy.Update(h, e)
}

func (p *recordingPolicy) Remove(h evict.Handle) {
	p.enter("remove", h)
	p.Policy.Remove(h)
}

func (p *recordingPolicy) Victim(now int64) (evict.Handle, bool) {
	p.enter("victim", 0)
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

// Writers and readers of one shard never make the policy's mutating calls
// run concurrently, deferred updates included, and leave the policy
// consistent with the entries (Check).
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
	wg.Wait()
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
