package typed_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/tidekv/tide/cas"
	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/typed"
)

func Example() {
	type Cart struct {
		Items []string `json:"items"`
	}
	clk := clock.NewManual(time.Unix(0, 0))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	carts, _ := typed.New(e, typed.Config[Cart]{Prefix: "cart:"}) // JSON by default

	carts.SetTTL("ada", Cart{Items: []string{"tea"}}, 30*time.Minute)

	// Read-modify-write with retry; an existing cart keeps its TTL (a new
	// one would be created without: NoTTL, said on purpose).
	c, _, err := carts.Update("ada", func(old Cart, exists bool) (Cart, error) {
		old.Items = append(old.Items, "scones")
		return old, nil
	}, cas.Options{TTL: engine.NoTTL})
	fmt.Println(c.Items, err)

	it, ok, _ := carts.GetItem("ada")
	fmt.Println(it.Value.Items, it.TTL, ok)

	raw, _ := e.Get("cart:ada") // the bytes the engine holds
	fmt.Println(string(raw))

	clk.Advance(30 * time.Minute)
	_, ok, err = carts.Get("ada")
	fmt.Println(ok, err)
	// Output:
	// [tea scones] <nil>
	// [tea scones] 30m0s true
	// {"items":["tea","scones"]}
	// false <nil>
}

func ExampleMap_CompareAndSwap() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()
	docs, _ := typed.New(e, typed.Config[string]{}) // strings are stored as is

	v1, _ := docs.Set("doc", "draft")
	_, ok, _ := docs.CompareAndSwap("doc", v1, "final")
	fmt.Println("first writer:", ok)
	_, ok, _ = docs.CompareAndSwap("doc", v1, "stale edit")
	fmt.Println("stale writer:", ok)
	// Output:
	// first writer: true
	// stale writer: false
}

func ExampleMap_Get_decodeError() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()
	counts, _ := typed.New(e, typed.Config[map[string]int]{})

	e.Set("k", []byte("not json")) // written by someone else
	_, ok, err := counts.Get("k")
	fmt.Println(ok, errors.Is(err, typed.ErrDecode))
	// Output: true true
}
