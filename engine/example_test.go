package engine_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
)

func Example() {
	clk := clock.NewManual(time.Unix(0, 0))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()

	e.SetTTL("greeting", []byte("hello"), time.Minute)
	v, ok := e.Get("greeting")
	fmt.Println(string(v), ok)

	clk.Advance(time.Minute) // at the deadline the key is already gone
	_, ok = e.Get("greeting")
	fmt.Println(ok)
	// Output:
	// hello true
	// false
}

func ExampleEngine_AppendGet() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()
	e.Set("k", []byte("value"))
	buf := make([]byte, 0, 64) // reused across reads: no allocation
	buf, ok := e.AppendGet(buf[:0], "k")
	fmt.Println(string(buf), ok)
	// Output: value true
}

func ExampleEngine_SetWith() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()
	// Set-if-absent: only the first writer wins.
	_, won, _ := e.SetWith("lock", []byte("worker-1"), engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: 30 * time.Second})
	_, won2, _ := e.SetWith("lock", []byte("worker-2"), engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: 30 * time.Second})
	fmt.Println(won, won2)
	// Output: true false
}

func ExampleEngine_CompareAndSwap() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()
	v1, _ := e.Set("doc", []byte("draft"))
	_, ok, _ := e.CompareAndSwap("doc", v1, []byte("final"))
	fmt.Println("first writer:", ok)
	_, ok, _ = e.CompareAndSwap("doc", v1, []byte("stale edit"))
	fmt.Println("stale writer:", ok)
	cur, _ := e.Get("doc")
	fmt.Println(string(cur))
	// Output:
	// first writer: true
	// stale writer: false
	// final
}

func ExampleEngine_IncrWith() {
	clk := clock.NewManual(time.Unix(0, 0))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	// A fixed window: the TTL is set only by the increment that creates the
	// counter, so later increments do not extend the window.
	for range 3 {
		e.IncrWith("sms:org42", 1, engine.IncrOptions{TTL: time.Hour})
		clk.Advance(10 * time.Minute)
	}
	n, _ := e.Get("sms:org42")
	ttl, _ := e.TTL("sms:org42")
	fmt.Println(string(n), ttl)
	e.Set("word", []byte("abc"))
	_, err := e.Incr("word")
	fmt.Println(errors.Is(err, engine.ErrNotInteger))
	// Output:
	// 3 30m0s
	// true
}

func ExampleEngine_Expire() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()
	e.Set("k", []byte("v"))
	gt, _ := e.Expire("k", time.Minute, engine.ExpireConditionGT) // no TTL counts as infinite
	lt, _ := e.Expire("k", time.Minute, engine.ExpireConditionLT)
	fmt.Println(gt, lt)
	ttl, ok := e.TTL("k")
	fmt.Println(ttl > 0, ok)
	if _, err := e.Persist("k"); err != nil {
		panic(err)
	}
	ttl, ok = e.TTL("k")
	fmt.Println(ttl == engine.NoTTL, ok)
	_, ok = e.TTL("missing")
	fmt.Println(ok)
	// Output:
	// false true
	// true true
	// true true
	// false
}

func ExampleConfig_onRemove() {
	clk := clock.NewManual(time.Unix(0, 0))
	e, _ := engine.New(engine.Config{Clock: clk, OnRemove: func(r engine.Removal) {
		fmt.Printf("%s %q (%s)\n", r.Key, r.Value, r.Cause)
	}})
	defer e.Close()
	e.SetTTL("session", []byte("s1"), time.Second)
	e.Set("session", []byte("s2"))
	e.Delete("session")
	e.SetTTL("token", []byte("t"), time.Second)
	clk.Advance(time.Second)
	e.RunExpiryCycle()
	// Output:
	// session "s1" (replaced)
	// session "s2" (deleted)
	// token "t" (expired)
}
