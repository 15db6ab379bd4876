package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// The seed case: a per-organisation SMS budget per hour. The counter's key
// is created by the first send of the hour and expires with it.
func Example_smsBudget() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	sms, _ := ratelimit.New(ratelimit.Config{
		Name:      "sms",
		Backend:   b,
		Algorithm: ratelimit.FixedWindow,
		Limit:     3,
		Period:    time.Hour,
	})
	ctx := context.Background()
	for i := range 4 {
		r, _ := sms.Allow(ctx, "org-42")
		fmt.Printf("sms %d: allowed=%v remaining=%d\n", i+1, r.Allowed, r.Remaining)
	}
	clk.Advance(time.Hour)
	r, _ := sms.Allow(ctx, "org-42")
	fmt.Printf("next hour: allowed=%v remaining=%d\n", r.Allowed, r.Remaining)
	// Output:
	// sms 1: allowed=true remaining=2
	// sms 2: allowed=true remaining=1
	// sms 3: allowed=true remaining=0
	// sms 4: allowed=false remaining=0
	// next hour: allowed=true remaining=2
}

func ExampleLimiter_Allow() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	// 1 request per second on average, bursts of 2.
	l, _ := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Limit: 1, Period: time.Second, Burst: 2})
	ctx := context.Background()
	for range 3 {
		r, _ := l.Allow(ctx, "user-7")
		fmt.Println(r.Allowed, r.Remaining, r.RetryAfter)
	}
	clk.Advance(time.Second)
	r, _ := l.Allow(ctx, "user-7")
	fmt.Println(r.Allowed, r.Remaining, r.RetryAfter)
	// Output:
	// true 1 0s
	// true 0 0s
	// false 0 1s
	// true 0 0s
}
