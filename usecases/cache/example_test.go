package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func ExampleCache() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	products := map[string]string{"sku-1": "kettle"}
	c, _ := cache.New(cache.Config{
		Name:        "products",
		Backend:     b,
		TTL:         10 * time.Minute, // ±10% jitter by default
		NegativeTTL: 30 * time.Second,
		Load: func(_ context.Context, sku string) ([]byte, bool, error) {
			fmt.Println("  origin lookup:", sku)
			v, ok := products[sku]
			return []byte(v), ok, nil
		},
	})
	ctx := context.Background()
	for _, sku := range []string{"sku-1", "sku-1", "sku-404", "sku-404"} {
		v, ok, _ := c.Get(ctx, sku)
		fmt.Printf("%s: %q %v\n", sku, v, ok)
	}
	// Output:
	//   origin lookup: sku-1
	// sku-1: "kettle" true
	// sku-1: "kettle" true
	//   origin lookup: sku-404
	// sku-404: "" false
	// sku-404: "" false
}

// A hot key is refreshed in the background once it is older than
// RefreshAfter; callers keep getting the value they had meanwhile.
func ExampleConfig_refreshAhead() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	price := "9.99"
	c, _ := cache.New(cache.Config{
		Name: "prices", Backend: b, NoJitter: true,
		TTL:          10 * time.Minute, // served at most this long
		RefreshAfter: 8 * time.Minute,  // refreshed in the background after this
		Load: func(context.Context, string) ([]byte, bool, error) {
			return []byte(price), true, nil
		},
	})
	ctx := context.Background()
	v, _, _ := c.Get(ctx, "sku-1")
	fmt.Println("first:", string(v))
	clk.Advance(9 * time.Minute)
	price = "10.49"
	v, _, _ = c.Get(ctx, "sku-1") // aged: served, and a refresh starts
	fmt.Println("aged:", string(v))
	c.Close() // waits for the refresh
	v, _, _ = c.Get(ctx, "sku-1")
	fmt.Println("refreshed:", string(v))
	fmt.Printf("%+v\n", c.Stats())
	// Output:
	// first: 9.99
	// aged: 9.99
	// refreshed: 10.49
	// {Hits:2 Misses:1 Loads:2 LoadErrors:0 Refreshes:1}
}
