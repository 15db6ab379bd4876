package featureflag_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func ExampleStore() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	flags, _ := featureflag.New(featureflag.Config{Backend: b})
	defer flags.Close()
	ctx := context.Background()

	flags.Create(ctx, "new-checkout", featureflag.State{Enabled: true, Rollout: 2000}, "ana", "20% rollout")
	read, _, _ := flags.Get(ctx, "new-checkout")
	half, _ := featureflag.Percent(50) // 5000 basis points
	flags.SetRollout(ctx, "new-checkout", half, "ana", "50%")
	_, err := flags.Update(ctx, read, featureflag.State{Enabled: false}, "bo", "based on a stale read")
	fmt.Println("stale write:", err)
	flags.Kill(ctx, "new-checkout", "oncall", "error rate")
	hist, _ := flags.History(ctx, "new-checkout")
	for _, h := range hist {
		fmt.Printf("rev %d by %s: %q enabled=%v killed=%v rollout=%d\n", h.Revision, h.Actor, h.Reason, h.After.Enabled, h.After.Killed, h.After.Rollout)
	}
	// Output:
	// stale write: tide: flag changed concurrently
	// rev 1 by ana: "20% rollout" enabled=true killed=false rollout=2000
	// rev 2 by ana: "50%" enabled=true killed=false rollout=5000
	// rev 3 by oncall: "error rate" enabled=true killed=true rollout=5000
}
