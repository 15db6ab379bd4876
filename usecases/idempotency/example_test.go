package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func ExampleStore_Do() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	s, _ := idempotency.New(idempotency.Config{Backend: b, Retention: 24 * time.Hour})
	ctx := context.Background()

	k := idempotency.Key{Scope: "customer-9", Operation: "charge", Key: "7f3c"}
	charge := func(context.Context) ([]byte, error) {
		fmt.Println("  charging the card")
		return []byte("receipt #1001"), nil
	}
	for _, amount := range []string{"100 EUR", "100 EUR", "500 EUR"} {
		res, replayed, err := s.Do(ctx, k, idempotency.Fingerprint([]byte(amount)), charge)
		switch {
		case errors.Is(err, idempotency.ErrMismatch):
			fmt.Println(amount, "→ rejected:", err)
		default:
			fmt.Printf("%s → %s (replayed %v)\n", amount, res, replayed)
		}
	}
	// Output:
	//   charging the card
	// 100 EUR → receipt #1001 (replayed false)
	// 100 EUR → receipt #1001 (replayed true)
	// 500 EUR → rejected: tide: idempotency key reused with a different request
}
