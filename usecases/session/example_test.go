package session_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func ExampleManager() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	m, _ := session.New(session.Config{Backend: b, IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 2 * time.Hour})
	ctx := context.Background()

	s, _ := m.Create(ctx, "alice", "acme", map[string]string{"role": "viewer"})
	// Active every 25 minutes: the 30-minute idle timer slides...
	for range 5 {
		clk.Advance(25 * time.Minute)
		_, ok, _ := m.Load(ctx, s.ID)
		fmt.Println(clk.Time().Format("15:04"), ok)
	}
	// ...up to the absolute deadline, 2 hours after creation.
	// Output:
	// 09:25 true
	// 09:50 true
	// 10:15 true
	// 10:40 true
	// 11:05 false
}
