package engine_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

// Goroutine and resource hygiene: Close ends every goroutine the engine
// started, operations after Close fail cleanly, and listeners that panic,
// block or call back into the engine do not corrupt it.

// engineGoroutines counts the goroutines that package engine started (the
// active expiry loop is the only kind), whether running or not yet
// started.
func engineGoroutines() int { return len(engineGoroutineStacks()) }

// engineGoroutineStacks returns the stacks of the goroutines that package
// engine started, for failure messages.
func engineGoroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var stacks []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "created by github.com/tidekv/tide/engine.") {
			stacks = append(stacks, g)
		}
	}
	return stacks
}

// waitFor polls cond for up to 5 s.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestCloseEndsGoroutines creates engines with every kind of expiry
// setting, works them, closes them, and checks that every goroutine they
// started has ended: the expiry loops (found by stack) and the process's
// goroutine count, which returns to where it was.
func TestCloseEndsGoroutines(t *testing.T) {
	// An earlier test's loop may still be returning after its Close did
	// (Close waits for the loop's deferred Done, not for its return):
	// start from none, or report the one that stays.
	if !waitFor(func() bool { return engineGoroutines() == 0 }) {
		t.Fatalf("expiry loops left running by earlier tests:\n%s", strings.Join(engineGoroutineStacks(), "\n\n"))
	}
	baseAll := runtime.NumGoroutine()
	var engines []*engine.Engine
	var expiring []chan struct{} // closed at the first removal by an engine whose loop runs soon
	intervals := []time.Duration{0, time.Nanosecond, time.Millisecond, time.Hour, -1}
	for i := 0; i < 20; i++ {
		iv := intervals[i%len(intervals)]
		removed := make(chan struct{})
		var once sync.Once
		e, err := engine.New(engine.Config{Shards: 1 << (i % 5), ExpiryInterval: iv, MaxBytes: 1 << 20, Policy: evict.AllKeysLFU,
			OnRemove: func(engine.Removal) { once.Do(func() { close(removed) }) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() }) // so that a failure here leaves no loop to fail the next tests
		if iv >= 0 && iv < time.Second {
			expiring = append(expiring, removed)
		}
		for j := 0; j < 200; j++ {
			e.SetTTL(fmt.Sprint(j), []byte("v"), time.Duration(1+j%3)*time.Millisecond)
		}
		engines = append(engines, e)
	}
	wantLoops := 16 // the four intervals ≥ 0 start a loop each; -1 does not
	if n := engineGoroutines(); n != wantLoops {
		t.Fatalf("%d expiry loops running, want %d:\n%s", n, wantLoops, strings.Join(engineGoroutineStacks(), "\n\n"))
	}
	// Close while the loops work: wait until each that runs soon has
	// expired something.
	for _, removed := range expiring {
		select {
		case <-removed:
		case <-time.After(30 * time.Second): // a deadlock bound, generous for a loaded machine
			t.Fatal("an expiry loop removed nothing in 10 s")
		}
	}
	for i, e := range engines {
		if i%2 == 0 {
			// Close concurrently from several goroutines: idempotent.
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() { defer wg.Done(); e.Close() }()
			}
			wg.Wait()
		} else if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	// Close waited for every loop (wg.Wait); a loop may still be exiting
	// after its deferred Done.
	if !waitFor(func() bool { return engineGoroutines() == 0 }) {
		t.Fatalf("%d expiry loops still running after Close, want 0:\n%s", engineGoroutines(), strings.Join(engineGoroutineStacks(), "\n\n"))
	}
	if !waitFor(func() bool { return runtime.NumGoroutine() <= baseAll }) {
		t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), baseAll)
	}
}

// TestOpsAfterClose: every write returns ErrClosed, every read misses,
// every delete or metadata change reports false, iteration is empty, and
// the invariants still hold.
func TestOpsAfterClose(t *testing.T) {
	clk := clock.NewManual(badStart)
	e, err := engine.New(engine.Config{Shards: 4, Clock: clk, ExpiryInterval: time.Millisecond, MaxBytes: 1 << 20, Policy: evict.AllKeysLRU})
	if err != nil {
		t.Fatal(err)
	}
	e.Set("k", []byte("1"))
	e.SetTTL("t", []byte("v"), time.Hour)
	it, _ := e.GetItem("k")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	closedErr := map[string]error{}
	closedErr["Set"] = func() error { _, err := e.Set("k", []byte("v")); return err }()
	closedErr["SetTTL"] = func() error { _, err := e.SetTTL("k", []byte("v"), time.Second); return err }()
	closedErr["SetWith"] = func() error {
		_, _, err := e.SetWith("n", nil, engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: engine.NoTTL})
		return err
	}()
	closedErr["CompareAndSwap"] = func() error { _, _, err := e.CompareAndSwap("k", it.Version, []byte("v")); return err }()
	closedErr["Incr"] = func() error { _, err := e.Incr("k"); return err }()
	closedErr["Decr"] = func() error { _, err := e.Decr("k"); return err }()
	closedErr["IncrBy"] = func() error { _, err := e.IncrBy("k", 5); return err }()
	closedErr["DecrBy"] = func() error { _, err := e.DecrBy("k", 5); return err }()
	closedErr["IncrWith"] = func() error {
		_, err := e.IncrWith("c", 1, engine.IncrOptions{TTL: time.Second, Pin: true})
		return err
	}()
	closedErr["Commit"] = func() error {
		_, _, err := e.Commit(nil, []engine.Op{{Key: "k", Value: []byte("v"), TTL: engine.NoTTL}})
		return err
	}()
	closedErr["Commit delete"] = func() error { _, _, err := e.Commit(nil, []engine.Op{{Key: "k", Delete: true}}); return err }()
	closedErr["Expire"] = func() error { _, err := e.Expire("t", time.Second, engine.ExpireConditionAlways); return err }()
	closedErr["ExpireAt due"] = func() error { _, err := e.ExpireAt("t", badStart, engine.ExpireConditionAlways); return err }()
	closedErr["ExpireAt"] = func() error {
		_, err := e.ExpireAt("t", badStart.Add(time.Minute), engine.ExpireConditionAlways)
		return err
	}()
	closedErr["GetAndExpire"] = func() error { _, _, err := e.GetAndExpire("t", time.Second); return err }()
	closedErr["Persist"] = func() error { _, err := e.Persist("t"); return err }()
	closedErr["Pin"] = func() error { _, err := e.Pin("k", true); return err }()
	closedErr["DeleteWith"] = func() error { _, _, err := e.DeleteWith("k", engine.DeleteOptions{}); return err }()
	for op, err := range closedErr {
		if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
	falses := map[string]bool{
		"Delete":           e.Delete("k"),
		"CompareAndDelete": e.CompareAndDelete("k", it.Version),
	}
	_, falses["Get"] = e.Get("k")
	_, falses["AppendGet"] = e.AppendGet(nil, "k")
	_, falses["GetItem"] = e.GetItem("k")
	_, falses["TTL"] = e.TTL("t")
	_, falses["GetAndDelete"] = e.GetAndDelete("k")
	for op, got := range falses {
		if got {
			t.Errorf("%s after Close reported true/found", op)
		}
	}
	for k := range e.All() {
		t.Errorf("All after Close yields %q", k)
	}
	if n, more := e.RunExpiryCycle(); n != 0 || more {
		t.Errorf("RunExpiryCycle after Close = %d %v", n, more)
	}
	if e.Len() != 0 {
		t.Errorf("Len after Close = %d", e.Len())
	}
	if st := e.Stats(); st.Entries != 0 || st.Bytes != 0 {
		t.Errorf("Stats after Close: %+v", st)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseDuringOperations closes an engine while writers, readers,
// counters, transactions and the expiry loop run (run it with -race).
// Every operation either completes before Close or fails cleanly; nothing
// panics, deadlocks, or races.
func TestCloseDuringOperations(t *testing.T) {
	for round := 0; round < 20; round++ {
		e, err := engine.New(engine.Config{Shards: 8, ExpiryInterval: 100 * time.Microsecond, MaxBytes: 64 << 10, Policy: evict.AllKeysRandom,
			OnRemove: func(engine.Removal) {}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var bad atomic.Value
		// Close comes after a number of operations that varies by round,
		// so that it meets each kind of operation at different stages.
		var done atomic.Int64
		target := int64(1 + round*round*50)
		busy := make(chan struct{})
		for w := 0; w < 6; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if done.Add(1) == target {
						close(busy)
					}
					k := fmt.Sprint("k", (i*7+w)%64)
					var err error
					switch (i + w) % 6 {
					case 0:
						_, err = e.SetTTL(k, []byte("12"), time.Millisecond)
					case 1:
						_, err = e.Incr(k)
						if errors.Is(err, engine.ErrNotInteger) {
							err = nil
						}
					case 2:
						_, _, err = e.Commit([]engine.Precondition{{Key: k, Version: 0}}, []engine.Op{{Key: k, Value: []byte("1"), TTL: engine.NoTTL}, {Key: k + "x", Delete: true}})
					case 3:
						e.Get(k)
						e.Delete(k)
					case 4:
						_, err = e.Expire(k, time.Millisecond, engine.ExpireConditionAlways)
					case 5:
						for range e.Items() {
							break
						}
						e.Stats()
					}
					if errors.Is(err, engine.ErrClosed) {
						return
					}
					if err != nil && !errors.Is(err, engine.ErrOutOfMemory) {
						bad.Store(err)
						return
					}
					if i > 1_000_000 {
						bad.Store(errors.New("no ErrClosed after Close"))
						return
					}
				}
			}()
		}
		exited := make(chan struct{}) // every worker gave up (bad is set)
		go func() { wg.Wait(); close(exited) }()
		select {
		case <-busy:
		case <-exited:
		}
		e.Close()
		wg.Wait()
		if err, _ := bad.Load().(error); err != nil {
			t.Fatal(err)
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

// Listeners. OnRemove runs outside every engine lock (the expiry cycle's
// included), on the goroutine that caused the removal. What happens when it misbehaves:
//
//   - It panics on a caller's goroutine: the panic propagates to the caller
//     of the operation that caused the removal (or out of RunExpiryCycle).
//     The operation itself is complete and the engine is consistent and
//     usable; removals of the same operation after the panicking one are
//     not reported.
//   - It panics on the background expiry goroutine: the engine recovers it,
//     counts it in Stats.ListenerPanics, reports the remaining removals, and
//     the loop goes on (the program does not crash).
//   - It blocks: only the goroutine that runs it waits. Other operations,
//     on any key and shard, RunExpiryCycle included, proceed. Close does not
//     wait for a listener running on the expiry goroutine (it may be the
//     caller, or wait for it); no listener call starts there after Close
//     returned, and the goroutine ends when the listener returns.
//   - It calls the engine: allowed (reads, writes, deletes, RunExpiryCycle,
//     and Close, from any goroutine), because no lock is held.

// TestListenerPanics: a panicking listener leaves the engine consistent
// and usable.
func TestListenerPanics(t *testing.T) {
	clk := clock.NewManual(badStart)
	var seen atomic.Int64
	e := newClockEngine(t, clk, func(c *engine.Config) {
		c.Shards = 1
		c.MaxBytes = 1000
		c.Policy = evict.AllKeysLRU
		c.OnRemove = func(r engine.Removal) {
			seen.Add(1)
			if strings.HasPrefix(r.Key, "boom") {
				panic("listener panic on " + r.Key)
			}
		}
	})
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s: the listener's panic did not propagate", name)
			}
		}()
		f()
	}
	e.Set("boom1", []byte("v"))
	mustPanic("Delete", func() { e.Delete("boom1") })
	if _, ok := e.Get("boom1"); ok {
		t.Fatal("Delete did not happen")
	}
	e.Set("boom2", []byte("v"))
	mustPanic("Set (Replaced)", func() { e.Set("boom2", []byte("w")) })
	if v, _ := e.Get("boom2"); string(v) != "w" {
		t.Fatalf("Set did not happen: %q", v)
	}
	e.SetTTL("boom3", []byte("v"), time.Second)
	e.SetTTL("ok", []byte("v"), time.Second)
	clk.Advance(time.Hour)
	mustPanic("RunExpiryCycle", func() { e.RunExpiryCycle() })
	e.RunExpiryCycle() // the cycle is usable again and finishes the job
	if st := e.Stats(); st.Entries != 1 || st.Due != 0 {
		t.Fatalf("after the cycles: %+v", st)
	}
	// Eviction: fill with boom keys, the write that evicts one panics but
	// is done.
	for i := 0; i < 6; i++ {
		func() {
			defer func() { recover() }()
			e.Set(fmt.Sprint("boom-fill", i), make([]byte, 100))
		}()
	}
	mustCheck(t, e)
	for k := range e.All() { // remove the panicking keys (each Delete panics)
		func() {
			defer func() { recover() }()
			e.Delete(k)
		}()
	}
	if e.Len() != 0 {
		t.Fatalf("Len = %d after deleting everything", e.Len())
	}
	// Everything still works, locks are free.
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Set("after", []byte("1"))
		e.Incr("after")
		e.Commit(nil, []engine.Op{{Key: "after2", Value: []byte("x"), TTL: engine.NoTTL}})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a deadlock bound, generous for a loaded machine
		t.Fatal("engine deadlocked after a listener panic")
	}
	if v, _ := e.Get("after"); string(v) != "2" {
		t.Fatalf("after = %q", v)
	}
	mustCheck(t, e)
}

// TestListenerPanicsInExpiryGoroutine: panics in the background expiry
// goroutine are recovered and counted, the other removals are still
// reported, and active expiry goes on.
func TestListenerPanicsInExpiryGoroutine(t *testing.T) {
	var reported atomic.Int64
	e, err := engine.New(engine.Config{Shards: 2, ExpiryInterval: time.Millisecond, OnRemove: func(r engine.Removal) {
		reported.Add(1)
		if strings.HasPrefix(r.Key, "boom") {
			panic("listener panic")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for i := 0; i < 100; i++ {
		e.SetTTL(fmt.Sprint("boom", i), []byte("v"), time.Millisecond)
		e.SetTTL(fmt.Sprint("fine", i), []byte("v"), time.Millisecond)
	}
	// Removals are reported after the shard's lock is released: wait for
	// all of them.
	if !waitFor(func() bool { return e.Stats().Entries == 0 && reported.Load() == 200 }) {
		t.Fatalf("active expiry stopped or removals were lost: %d reported, %+v", reported.Load(), e.Stats())
	}
	st := e.Stats()
	if st.ListenerPanics == 0 || st.ListenerPanics > 100 {
		t.Fatalf("ListenerPanics = %d, want 1..100", st.ListenerPanics)
	}
	if reported.Load() != 200 {
		t.Fatalf("%d removals reported, want 200 (those after a recovered panic included)", reported.Load())
	}
	mustCheck(t, e)
}

// TestListenerBlocks: a listener blocked on one removal does not stop
// other operations, on the same shard or others; Close does not wait for a
// listener blocked in the background expiry goroutine (it could be waiting
// for Close's caller), and the goroutine ends once the listener returns.
func TestListenerBlocks(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan string, 16)
	e, err := engine.New(engine.Config{Shards: 1, ExpiryInterval: time.Millisecond, OnRemove: func(r engine.Removal) {
		if strings.HasPrefix(r.Key, "block") {
			entered <- r.Key
			<-release
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.Set("block-delete", []byte("v"))
	go e.Delete("block-delete")
	<-entered
	// The deleting goroutine is stuck in the listener. Same shard:
	ops := make(chan struct{})
	var checkErr error // written before ops is closed
	go func() {
		defer close(ops)
		for i := 0; i < 100; i++ {
			e.Set(fmt.Sprint("k", i), []byte("v"))
			e.Get(fmt.Sprint("k", i))
			e.Delete(fmt.Sprint("k", i))
			e.Incr("n")
		}
		e.Set("block-delete", []byte("again"))
		e.Commit(nil, []engine.Op{{Key: "x", Value: []byte("1"), TTL: engine.NoTTL}})
		e.Stats()
		checkErr = e.Check()
	}()
	select {
	case <-ops:
	case <-time.After(30 * time.Second): // a deadlock bound, generous for a loaded machine
		t.Fatal("operations blocked behind a blocked listener")
	}
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	// Now block the expiry goroutine.
	e.SetTTL("block-expiry", []byte("v"), time.Millisecond)
	if k := <-entered; k != "block-expiry" {
		t.Fatalf("unexpected removal %q", k)
	}
	if !returnsWithin(func() { e.Close() }) {
		t.Fatal("Close waited for a listener blocked in the expiry goroutine")
	}
	close(release) // lets the delete and the expiry listener return
	if !waitFor(func() bool { return engineGoroutines() == 0 }) {
		t.Fatalf("the expiry goroutine did not end after its listener returned:\n%s", strings.Join(engineGoroutineStacks(), "\n\n"))
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseStartsNoExpiryListenerAfterReturn: Close called while the
// expiry goroutine runs a listener returns without waiting for it, and
// from then on the goroutine starts no listener call (the removals it has
// not reported yet are dropped with the rest of the engine's contents);
// the goroutine ends when the running listener returns.
func TestCloseStartsNoExpiryListenerAfterReturn(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var started atomic.Int64
	e, err := engine.New(engine.Config{Shards: 1, ExpiryInterval: time.Millisecond, OnRemove: func(engine.Removal) {
		started.Add(1)
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		e.SetTTL(fmt.Sprint("k", i), []byte("v"), time.Millisecond)
	}
	<-entered // the expiry goroutine is in the first listener call
	if !returnsWithin(func() { e.Close() }) {
		t.Fatal("Close waited for a listener running on the expiry goroutine")
	}
	atClose := started.Load()
	close(release)
	if !waitFor(func() bool { return engineGoroutines() == 0 }) {
		t.Fatalf("the expiry goroutine outlives its listener after Close:\n%s", strings.Join(engineGoroutineStacks(), "\n\n"))
	}
	if n := started.Load(); n != atClose {
		t.Fatalf("%d listener calls started after Close returned", n-atClose)
	}
}

// TestListenerCallsEngine: a listener may read, write and delete, from an
// operation's goroutine and from the expiry goroutine, without deadlock.
func TestListenerCallsEngine(t *testing.T) {
	var e *engine.Engine
	var calls atomic.Int64
	expired := make(chan struct{}) // closed once a listener for an expiry has called the engine
	var once sync.Once
	e, err := engine.New(engine.Config{Shards: 2, ExpiryInterval: time.Millisecond, MaxBytes: 2 << 10, Policy: evict.AllKeysLRU,
		OnRemove: func(r engine.Removal) {
			calls.Add(1)
			if strings.HasPrefix(r.Key, "audit") {
				return
			}
			e.Get(r.Key)
			e.Incr("audit:" + r.Cause.String())
			e.Delete("audit:nothing")
			if r.Cause == engine.CauseExpired {
				once.Do(func() { close(expired) })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			k := fmt.Sprint("k", i%20)
			e.SetTTL(k, make([]byte, 50), time.Duration(1+i%3)*time.Millisecond)
			if i%7 == 0 {
				e.Delete(k)
			}
		}
		<-expired // the keys expire in 1-3 ms, lazily or in the expiry goroutine
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a deadlock bound, generous for a loaded machine
		t.Fatal("deadlock with a listener that calls the engine")
	}
	if calls.Load() == 0 {
		t.Fatal("listener never called")
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestListenerCallsClose: a listener that calls Close while running on the
// background expiry goroutine must not deadlock (Close must not wait for
// that very goroutine), and the goroutine ends.
func TestListenerCallsClose(t *testing.T) {
	var e *engine.Engine
	done := make(chan struct{})
	var once sync.Once
	e, err := engine.New(engine.Config{ExpiryInterval: time.Millisecond, OnRemove: func(engine.Removal) {
		e.Close()
		once.Do(func() { close(done) })
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.SetTTL("k", []byte("v"), time.Millisecond)
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a deadlock bound, generous for a loaded machine
		t.Fatal("Close called by a listener on the expiry goroutine deadlocks")
	}
	if !waitFor(func() bool { return engineGoroutines() == 0 }) {
		t.Fatalf("expiry goroutine still running after Close:\n%s", strings.Join(engineGoroutineStacks(), "\n\n"))
	}
}
