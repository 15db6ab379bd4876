// Command tidelab walks through tide's core semantics on the real engine
// with a manual clock, printing what happens: lazy and active expiration,
// an atomic counter, set-if-absent, compare-and-swap rejecting a stale
// version, and eviction (which is not expiration) under a memory cap.
//
//	go run ./cmd/tidelab
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tidelab:", err)
		os.Exit(1)
	}
}

func scene(title string) { fmt.Printf("\n== %s ==\n", title) }

func run() error {
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	clk := clock.NewManual(start)
	at := func() string { return "t+" + clk.Time().Sub(start).String() }
	e, err := engine.New(engine.Config{
		Clock:          clk,
		ExpiryInterval: -1, // we run the active cycle by hand to show it
		OnRemove: func(r engine.Removal) {
			if !quiet.Load() {
				fmt.Printf("   [listener] %q removed: %s\n", r.Key, r.Cause)
			}
		},
	})
	if err != nil {
		return err
	}
	defer e.Close()

	scene("1. Lazy expiration: a key is gone at its deadline")
	e.SetTTL("otp:alice", []byte("492113"), 30*time.Second)
	fmt.Printf("%s  SetTTL otp:alice 30s\n", at())
	clk.Advance(30*time.Second - time.Nanosecond)
	v, ok := e.Get("otp:alice")
	fmt.Printf("%s  Get -> %q found=%v (1ns before the deadline)\n", at(), v, ok)
	clk.Advance(time.Nanosecond)
	_, ok = e.Get("otp:alice")
	fmt.Printf("%s  Get -> found=%v (at the deadline; the read removed it)\n", at(), ok)

	scene("2. Active expiration: the cycle reclaims due keys in deadline order")
	for i := range 10_000 {
		e.SetTTL("cache:"+strconv.Itoa(i), make([]byte, 100), time.Duration(1+i%5)*time.Second)
	}
	e.Set("config", []byte("keep me"))
	st := e.Stats()
	fmt.Printf("%s  10,000 keys with TTLs 1–5 s, 1 without: entries=%d bytes=%d\n", at(), st.Entries, st.Bytes)
	clk.Advance(3 * time.Second)
	st = e.Stats()
	fmt.Printf("%s  due but not yet reclaimed: %d (invisible to reads already)\n", at(), st.Due)
	n, more := 0, true
	for more {
		var k int
		k, more = runCycleQuietly(e)
		n += k
	}
	st = e.Stats()
	fmt.Printf("%s  active cycle reclaimed %d; entries=%d due=%d expired(total)=%d\n", at(), n, st.Entries, st.Due, st.Expired)

	scene("3. Atomic counter: 8 goroutines × 1,000 increments")
	quiet.Store(true) // 8,000 "replaced" notifications would drown the output
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				e.Incr("page:views")
			}
		}()
	}
	wg.Wait()
	quiet.Store(false)
	v, _ = e.Get("page:views")
	fmt.Printf("page:views = %s (exactly 8000: no lost update)\n", v)
	e.Set("name", []byte("tide"))
	_, err = e.Incr("name")
	fmt.Printf("Incr on a key holding %q -> %v (value unchanged)\n", "tide", err)

	scene("4. Set-if-absent: two workers race for a job lock")
	for _, w := range []string{"worker-1", "worker-2"} {
		_, won, _ := e.SetWith("lock:job42", []byte(w), engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: 10 * time.Second})
		fmt.Printf("%s  %s SetIfAbsent lock:job42 -> won=%v\n", at(), w, won)
	}
	clk.Advance(10 * time.Second)
	_, won, _ := e.SetWith("lock:job42", []byte("worker-2"), engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: 10 * time.Second})
	fmt.Printf("%s  worker-2 retries after the lock's TTL -> won=%v (an expired key is absent)\n", at(), won)

	scene("5. Compare-and-swap rejects a stale version")
	v1, _ := e.Set("profile:bob", []byte(`{"email":"bob@old"}`))
	fmt.Printf("Set profile:bob -> version %d\n", v1)
	v2, ok, _ := e.CompareAndSwap("profile:bob", v1, []byte(`{"email":"bob@new"}`))
	fmt.Printf("editor A: CAS(expect %d) -> swapped=%v, version %d\n", v1, ok, v2)
	_, ok, _ = e.CompareAndSwap("profile:bob", v1, []byte(`{"email":"bob@stale"}`))
	cur, _ := e.Get("profile:bob")
	fmt.Printf("editor B: CAS(expect %d) -> swapped=%v; value stays %s\n", v1, ok, cur)
	e.Delete("profile:bob")
	v3, _ := e.Set("profile:bob", []byte(`{"email":"bob@again"}`))
	_, ok, _ = e.CompareAndSwap("profile:bob", v2, []byte("ABA?"))
	fmt.Printf("deleted and recreated: new version %d; CAS with old version %d -> swapped=%v (versions are never reused)\n", v3, v2, ok)

	return evictionScene()
}

// runCycleQuietly runs one expiry cycle with the scene's listener output
// suppressed (it would print thousands of lines).
func runCycleQuietly(e *engine.Engine) (int, bool) {
	quiet.Store(true)
	defer quiet.Store(false)
	return e.RunExpiryCycle()
}

func evictionScene() error {
	scene("6. Eviction is not expiration")
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	clk := clock.NewManual(start)
	const value = 200
	entry := int64(len("user:1")) + value + engine.EntryOverhead
	e, err := engine.New(engine.Config{
		Clock:          clk,
		Shards:         1,
		MaxBytes:       4 * entry, // room for exactly four entries
		Policy:         evict.AllKeysLRU,
		ExpiryInterval: -1,
		OnRemove: func(r engine.Removal) {
			fmt.Printf("   [listener] %q removed: %s\n", r.Key, r.Cause)
		},
	})
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Printf("cap %d bytes = 4 entries of %d (key + value + %d overhead), policy %s\n", 4*entry, entry, engine.EntryOverhead, evict.AllKeysLRU.Name)
	for i := 1; i <= 4; i++ {
		e.SetTTL("user:"+strconv.Itoa(i), make([]byte, value), time.Hour)
		clk.Advance(time.Second)
	}
	e.Get("user:1") // user:1 is now the most recently used; user:2 the least
	fmt.Println("4 keys with 1 h TTLs written; user:1 read again")
	ttl, _ := e.TTL("user:2")
	fmt.Printf("user:2 still has %v to live\n", ttl.Round(time.Second))
	fmt.Println("writing user:5 needs room:")
	if _, err := e.SetTTL("user:5", make([]byte, value), time.Hour); err != nil {
		return err
	}
	_, ok := e.Get("user:2")
	st := e.Stats()
	fmt.Printf("user:2 found=%v; stats: evicted=%d expired=%d bytes=%d/%d\n", ok, st.Evicted, st.Expired, st.Bytes, st.MaxBytes)

	fmt.Println("with noeviction the same write fails and changes nothing:")
	strict, err := engine.New(engine.Config{Clock: clk, Shards: 1, MaxBytes: 4 * entry, ExpiryInterval: -1})
	if err != nil {
		return err
	}
	defer strict.Close()
	for i := 1; i <= 4; i++ {
		strict.SetTTL("user:"+strconv.Itoa(i), make([]byte, value), time.Hour)
	}
	_, err = strict.SetTTL("user:5", make([]byte, value), time.Hour)
	fmt.Printf("SetTTL user:5 -> %v; entries still %d\n", err, strict.Len())
	return nil
}
