package lease_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// A holder pauses past its lease; the next holder's token supersedes it at
// the resource.
func Example_fencing() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	m, _ := lease.New(lease.Config{Backend: b, TTL: 10 * time.Second})
	ctx := context.Background()
	var db lease.Resource

	a, _, _, _ := m.Acquire(ctx, "ledger", "worker-a")
	fmt.Println("A token", a.Token, "write:", db.Check(a.Token))
	clk.Advance(15 * time.Second) // A is paused past its expiry
	bl, _, ok, _ := m.Acquire(ctx, "ledger", "worker-b")
	fmt.Println("B acquired", ok, "token", bl.Token, "write:", db.Check(bl.Token))
	fmt.Println("A wakes, write:", db.Check(a.Token))
	// Output:
	// A token 1 write: <nil>
	// B acquired true token 2 write: <nil>
	// A wakes, write: tide: stale fencing token: 1 < 2
}
