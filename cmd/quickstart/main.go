// Command quickstart is the README's quick start, kept compiling and
// tested: the engine with a byte cap, then a rate limiter on it.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	// A 256 MiB cap evicted by the recommended policy (W-TinyLFU that
	// tunes itself to the workload). The zero Config is unbounded, and a
	// cap without a Policy is noeviction: writes fail when it is full.
	e, err := engine.New(engine.Config{MaxBytes: 256 << 20, Policy: evict.Adaptive})
	if err != nil {
		return err
	}
	defer e.Close()

	if _, err := e.SetTTL("session:42", []byte(`{"user":"ada"}`), 30*time.Minute); err != nil {
		return err
	}
	v, ok := e.Get("session:42")
	fmt.Fprintln(w, string(v), ok)

	// The TTL is set by the increment that creates the key; a key that
	// never expires is said with engine.NoTTL, never with 0.
	n, err := e.IncrWith("sms:org7", 1, engine.IncrOptions{TTL: time.Hour})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, n)

	it, _ := e.GetItem("session:42")
	_, swapped, err := e.CompareAndSwap("session:42", it.Version, []byte(`{"user":"ada","admin":true}`))
	if err != nil {
		return err
	}
	fmt.Fprintln(w, swapped)

	// An adapter on the same engine: 2 logins per client per minute.
	b, err := embedded.New(embedded.Config{Engine: e})
	if err != nil {
		return err
	}
	logins, err := ratelimit.New(ratelimit.Config{Name: "login", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 2, Period: time.Minute})
	if err != nil {
		return err
	}
	for range 3 {
		r, err := logins.Allow(context.Background(), "203.0.113.7")
		if err != nil {
			return err // the store failed; r says what OnStoreError chose
		}
		fmt.Fprintln(w, "login allowed:", r.Allowed)
	}
	return nil
}
