package embedded_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// A Backend wraps an engine; every adapter (session, cache, ratelimit,
// idempotency, lease, flags) takes it as its Backend.
func ExampleNew() {
	e, err := engine.New(engine.Config{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	b, err := embedded.New(embedded.Config{Engine: e})
	if err != nil {
		panic(err)
	}
	products, err := cache.New(cache.Config{Name: "products", Backend: b,
		Load: func(_ context.Context, sku string) ([]byte, bool, error) { return []byte("kettle"), true, nil }})
	if err != nil {
		panic(err)
	}
	defer products.Close()
	v, found, err := products.Get(context.Background(), "sku-1")
	fmt.Println(string(v), found, err)
	// Output: kettle true <nil>
}

// The primitives: a set-if-absent, a compare-and-swap on the version, and
// a TTL applied by the store on the engine's clock.
func ExampleBackend_Set() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk}) // the engine's clock
	ctx := context.Background()

	v1, ok, _ := b.Set(ctx, "job:42", []byte("queued"), store.SetOptions{IfAbsent: true, TTL: time.Minute})
	fmt.Println("created:", ok)
	_, ok, _ = b.Set(ctx, "job:42", []byte("queued"), store.SetOptions{IfAbsent: true, TTL: time.Minute})
	fmt.Println("created again:", ok)
	_, ok, _ = b.Set(ctx, "job:42", []byte("running"), store.SetOptions{IfVersion: v1, TTL: time.Minute})
	fmt.Println("CAS at the read version:", ok)
	_, ok, _ = b.Set(ctx, "job:42", []byte("done"), store.SetOptions{IfVersion: v1, TTL: time.Minute})
	fmt.Println("CAS at a stale version:", ok)
	it, _, _ := b.Get(ctx, "job:42")
	fmt.Println(string(it.Value), it.TTL)
	clk.Advance(time.Minute)
	_, ok, _ = b.Get(ctx, "job:42")
	fmt.Println("after its TTL:", ok)
	// Output:
	// created: true
	// created again: false
	// CAS at the read version: true
	// CAS at a stale version: false
	// running 1m0s
	// after its TTL: false
}
