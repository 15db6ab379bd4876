package expiry

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestIndexOrderAndPop(t *testing.T) {
	x := NewIndex()
	for _, it := range []Item{{30, 1}, {10, 2}, {20, 3}, {10, 1}} {
		x.Add(it)
	}
	x.Add(Item{10, 2}) // duplicate: no-op
	if x.Len() != 4 {
		t.Fatalf("Len = %d want 4", x.Len())
	}
	if got := x.CountDue(20); got != 3 {
		t.Fatalf("CountDue(20) = %d want 3", got)
	}
	var got []Item
	for {
		it, ok := x.PopDue(20)
		if !ok {
			break
		}
		got = append(got, it)
	}
	want := []Item{{10, 1}, {10, 2}, {20, 3}}
	if !slices.Equal(got, want) {
		t.Fatalf("PopDue order = %v want %v", got, want)
	}
	if !x.Remove(Item{30, 1}) || x.Remove(Item{30, 1}) {
		t.Fatal("Remove reported wrongly")
	}
	if x.CountDue(1<<63-1) != 0 {
		t.Fatal("CountDue on empty index")
	}
}

func TestCountDueAtMaxTime(t *testing.T) {
	x := NewIndex()
	x.Add(Item{1<<63 - 1, 1})
	x.Add(Item{5, 2})
	if got := x.CountDue(1<<63 - 1); got != 2 {
		t.Fatalf("CountDue(MaxInt64) = %d want 2", got)
	}
}

// fakePart is a Reclaimer over a sorted slice of deadlines.
type fakePart struct {
	deadlines []int64
	calls     int
}

func (p *fakePart) ReclaimDue(now int64, max int) (int, bool) {
	p.calls++
	n := 0
	for n < max && len(p.deadlines) > 0 && p.deadlines[0] <= now {
		p.deadlines = p.deadlines[1:]
		n++
	}
	return n, len(p.deadlines) > 0 && p.deadlines[0] <= now
}

func TestCycleBudgetAndFairness(t *testing.T) {
	tests := []struct {
		name     string
		parts    [][]int64
		budget   Budget
		now      int64
		wantN    int
		wantMore bool
		wantLeft []int
	}{
		{"all due within budget", [][]int64{{1, 2}, {1}, {}}, Budget{Count: 10, Batch: 1}, 5, 3, false, []int{0, 0, 0}},
		{"count budget cuts", [][]int64{{1, 2, 3}, {1, 2, 3}}, Budget{Count: 4, Batch: 1}, 5, 4, true, []int{1, 1}},
		{"not yet due stays", [][]int64{{1, 9}, {10}}, Budget{Count: 10}, 5, 1, false, []int{1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts []Reclaimer
			var fakes []*fakePart
			for _, d := range tt.parts {
				f := &fakePart{deadlines: slices.Clone(d)}
				fakes = append(fakes, f)
				parts = append(parts, f)
			}
			c := NewCycle(parts, tt.budget, nil)
			n, more := c.Run(tt.now)
			if n != tt.wantN || more != tt.wantMore {
				t.Fatalf("Run = %d,%v want %d,%v", n, more, tt.wantN, tt.wantMore)
			}
			for i, f := range fakes {
				if len(f.deadlines) != tt.wantLeft[i] {
					t.Fatalf("part %d has %d left, want %d", i, len(f.deadlines), tt.wantLeft[i])
				}
			}
		})
	}
}

func TestCycleTimeBudget(t *testing.T) {
	p := &fakePart{}
	for i := range 1000 {
		p.deadlines = append(p.deadlines, int64(i))
	}
	var clock int64
	elapsed := func() int64 { clock += int64(time.Millisecond); return clock }
	c := NewCycle([]Reclaimer{p}, Budget{Batch: 10, Time: 5 * time.Millisecond}, elapsed)
	n, more := c.Run(1 << 40)
	if !more || n == 0 || n >= 1000 {
		t.Fatalf("Run with a 5 ms budget on a fake clock = %d,%v; want a partial run", n, more)
	}
}

// TestCycleDrainsInDeadlineOrder checks, with random deadlines, that
// repeated cycles remove exactly the due items of each part.
func TestCycleDrainsInDeadlineOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "parts")
		var parts []Reclaimer
		var fakes []*fakePart
		for i := range n {
			d := rapid.SliceOf(rapid.Int64Range(0, 100)).Draw(t, "d"+string(rune('0'+i)))
			slices.Sort(d)
			f := &fakePart{deadlines: d}
			fakes = append(fakes, f)
			parts = append(parts, f)
		}
		now := rapid.Int64Range(0, 100).Draw(t, "now")
		c := NewCycle(parts, Budget{Count: rapid.IntRange(1, 20).Draw(t, "count"), Batch: rapid.IntRange(1, 5).Draw(t, "batch")}, nil)
		for range 1000 {
			if _, more := c.Run(now); !more {
				break
			}
		}
		for i, f := range fakes {
			if len(f.deadlines) > 0 && f.deadlines[0] <= now {
				t.Fatalf("part %d still has due deadline %d at %d", i, f.deadlines[0], now)
			}
		}
	})
}

// TestPassStepsOneBatchAtATime: a pass reclaims exactly one batch per Step
// (so its owner can report each batch with no lock held), and passes that
// interleave on one cycle each keep their own budget and together drain
// every part.
func TestPassStepsOneBatchAtATime(t *testing.T) {
	a := &fakePart{deadlines: []int64{1, 2, 3, 4, 5}}
	b := &fakePart{deadlines: []int64{1, 2, 3}}
	c := NewCycle([]Reclaimer{a, b}, Budget{Count: 100, Batch: 2}, nil)
	p, q := c.Begin(10), c.Begin(10)
	steps := 0
	for pOK, qOK := true, true; pOK || qOK; {
		calls := a.calls + b.calls
		if pOK {
			pOK = p.Step()
			if pOK && a.calls+b.calls != calls+1 {
				t.Fatalf("a Step reclaimed %d batches, want 1", a.calls+b.calls-calls)
			}
			steps++
		}
		if qOK {
			qOK = q.Step()
			steps++
		}
		if steps > 100 {
			t.Fatal("the passes do not end")
		}
	}
	if len(a.deadlines)+len(b.deadlines) != 0 {
		t.Fatalf("left %v %v", a.deadlines, b.deadlines)
	}
	if p.Removed()+q.Removed() != 8 || p.More() || q.More() {
		t.Fatalf("removed %d+%d more %v %v, want 8 in all and no more", p.Removed(), q.Removed(), p.More(), q.More())
	}
}
