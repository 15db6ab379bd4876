package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunLease(t, storetest.Embedded)
}

func TestNewRejects(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for i, c := range []lease.Config{
		{},
		{Backend: b, TTL: -1},
		{Backend: b, Drift: 0.7},
		{Backend: b, Margin: -time.Second},
	} {
		if _, err := lease.New(c); !errors.Is(err, lease.ErrInvalidConfig) {
			t.Errorf("case %d: got %v, want ErrInvalidConfig", i, err)
		}
	}
}

// TestFenceAcrossRestart shows the two documented mechanisms that keep
// tokens increasing when a non-durable store restarts empty.
func TestFenceAcrossRestart(t *testing.T) {
	ctx := context.Background()
	// Process 1.
	b1, clk1 := storetest.NewEmbedded(t)
	res := lease.NewResource(0)
	m1, _ := lease.New(lease.Config{Backend: b1, Floor: lease.ClockFloor(b1)})
	l1, _, _, _ := m1.Acquire(ctx, "job", "p1")
	if err := res.Check(l1.Token); err != nil {
		t.Fatal(err)
	}
	// Restart: a new engine, empty; its clock has moved on.
	b2, clk2 := storetest.NewEmbedded(t)
	clk2.Set(clk1.Time().Add(time.Second))
	m2, _ := lease.New(lease.Config{Backend: b2, Floor: lease.ClockFloor(b2)})
	l2, _, _, _ := m2.Acquire(ctx, "job", "p2")
	if l2.Token <= l1.Token {
		t.Fatalf("ClockFloor: token after restart %d, want > %d", l2.Token, l1.Token)
	}
	if err := res.Check(l2.Token); err != nil {
		t.Fatalf("resource rejected the post-restart token: %v", err)
	}
	// Without a floor, a restarted store would hand out 1 again, which the
	// resource rejects: the failure is safe but the service is stuck.
	b3, _ := storetest.NewEmbedded(t)
	m3, _ := lease.New(lease.Config{Backend: b3})
	l3, _, _, _ := m3.Acquire(ctx, "job", "p3")
	if err := res.Check(l3.Token); !errors.Is(err, lease.ErrStaleToken) {
		t.Fatalf("token %d from a floorless restarted store: got %v, want ErrStaleToken", l3.Token, err)
	}
	// The resource's durable highest as the floor.
	b4, _ := storetest.NewEmbedded(t)
	m4, _ := lease.New(lease.Config{Backend: b4, Floor: func(context.Context, string) (uint64, error) {
		return res.Highest() + 1, nil
	}})
	l4, _, _, _ := m4.Acquire(ctx, "job", "p4")
	if l4.Token != res.Highest()+1 || res.Check(l4.Token) != nil {
		t.Fatalf("resource floor: token %d, want %d and accepted", l4.Token, res.Highest()+1)
	}
}

func TestSafeRemaining(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	local := clock.NewManual(time.Unix(0, 0))
	m, _ := lease.New(lease.Config{Backend: b, TTL: 10 * time.Second, Drift: 0.01, Margin: 5 * time.Millisecond, LocalClock: local})
	l, _, _, _ := m.Acquire(context.Background(), "x", "A")
	cases := []struct {
		advance time.Duration
		want    time.Duration
	}{
		{0, 9900*time.Millisecond - 5*time.Millisecond},
		{9 * time.Second, 900*time.Millisecond - 5*time.Millisecond},
		{time.Second, -100*time.Millisecond - 5*time.Millisecond},
	}
	for i, c := range cases {
		local.Advance(c.advance)
		if got := m.SafeRemaining(l); got != c.want {
			t.Errorf("case %d: got %v, want %v", i, got, c.want)
		}
	}
	ctx, cancel := m.SafeContext(context.Background(), l)
	defer cancel()
	if ctx.Err() == nil {
		t.Fatal("SafeContext of a lease past its safe deadline is not cancelled")
	}
	if m.SafeRemaining(nil) != 0 {
		t.Fatal("SafeRemaining(nil) != 0")
	}
}
