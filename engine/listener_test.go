package engine_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
)

// Listener delivery under adversarial listeners: listeners that call Close,
// run the expiry cycle, block, or panic, on a caller's goroutine and on the
// expiry goroutine, concurrently with the expiry loop and other callers.

// deadlockBound is how long a test waits for something that returns at once
// when the engine is correct; reaching it means a deadlock.
const deadlockBound = 30 * time.Second

// returnsWithin runs f on a new goroutine and reports whether it returned
// within deadlockBound (a deadlocked f is left blocked; the test fails).
func returnsWithin(f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(deadlockBound):
		return false
	}
}

// testGoroutineID parses the calling goroutine's id from its stack header:
// the tests use it to tell the expiry goroutine's listener calls from a
// caller's.
func testGoroutineID() uint64 {
	var buf [32]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// TestCloseNeverDeadlocks: Close is idempotent and returns from any
// goroutine, in any order, also when the application and an OnRemove
// listener running on the expiry goroutine close the engine at the same
// time (each Close call must return, and the expiry goroutine must end).
func TestCloseNeverDeadlocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		// listenerFirst: the listener's Close starts before the
		// application's; otherwise the application's Close has begun
		// (Closed reports true) before the listener calls Close.
		listenerFirst bool
	}{
		{"application closes, then the expiry listener", false},
		{"expiry listener closes, then the application", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *engine.Engine
			entered := make(chan struct{})
			release := make(chan struct{})
			listenerClosed := make(chan struct{})
			var once sync.Once
			e, err := engine.New(engine.Config{ExpiryInterval: time.Millisecond, OnRemove: func(engine.Removal) {
				once.Do(func() {
					close(entered)
					<-release
					e.Close()
					close(listenerClosed)
				})
			}})
			if err != nil {
				t.Fatal(err)
			}
			e.SetTTL("k", []byte("v"), time.Millisecond)
			<-entered // the expiry goroutine is in the listener
			appClosed := make(chan struct{})
			if tc.listenerFirst {
				close(release)
				if !returnsWithin(func() { <-listenerClosed }) {
					t.Fatal("Close called by a listener on the expiry goroutine did not return")
				}
				go func() { e.Close(); close(appClosed) }()
			} else {
				go func() { e.Close(); close(appClosed) }()
				if !waitFor(e.Closed) {
					t.Fatal("the application's Close did not begin")
				}
				close(release)
			}
			if !returnsWithin(func() { <-appClosed; <-listenerClosed }) {
				t.Fatal("Close deadlocked: the application's and the listener's Close did not both return")
			}
			if !returnsWithin(func() { e.Close() }) {
				t.Fatal("a third Close did not return")
			}
			if !waitFor(func() bool { return engineGoroutines() == 0 }) {
				t.Fatalf("the expiry goroutine outlives Close:\n%s", strings.Join(engineGoroutineStacks(), "\n\n"))
			}
		})
	}
}

// TestListenerRunsOutsideCycleLock: OnRemove runs outside every engine
// lock, the expiry cycle's included. A listener may run the expiry cycle
// itself, and a listener that blocks stalls only its own goroutine: other
// callers of RunExpiryCycle go on.
func TestListenerRunsOutsideCycleLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		// background: the blocking listener runs on the expiry goroutine
		// rather than on a caller's RunExpiryCycle.
		background bool
		// reenter: the listener calls RunExpiryCycle instead of
		// blocking.
		reenter bool
	}{
		{name: "listener calls RunExpiryCycle", reenter: true},
		{name: "listener blocked in a caller's cycle"},
		{name: "listener blocked in the expiry goroutine", background: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *engine.Engine
			entered := make(chan struct{}, 1)
			release := make(chan struct{})
			var removed sync.Map
			interval := time.Duration(-1)
			if tc.background {
				interval = time.Millisecond
			}
			e, err := engine.New(engine.Config{Shards: 1, ExpiryInterval: interval, ExpiryBudget: expiryBudget(0, 1, 0),
				OnRemove: func(r engine.Removal) {
					removed.Store(r.Key, r.Cause)
					if r.Key != "first" {
						return
					}
					if tc.reenter {
						e.RunExpiryCycle()
						return
					}
					entered <- struct{}{}
					<-release
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			defer close(release) // before Close: a failing run must not hang in it
			e.SetTTL("first", []byte("v"), time.Nanosecond)
			time.Sleep(time.Microsecond) // the real clock passes "first"'s deadline
			if tc.reenter {
				if !returnsWithin(func() { e.RunExpiryCycle() }) {
					t.Fatal("a listener calling RunExpiryCycle deadlocked")
				}
				if _, ok := removed.Load("first"); !ok {
					t.Fatal("the removal was not reported")
				}
				return
			}
			if !tc.background {
				go e.RunExpiryCycle()
			}
			<-entered // a listener for "first" is blocked
			e.SetTTL("second", []byte("v"), time.Nanosecond)
			time.Sleep(time.Microsecond)
			var n int
			if !returnsWithin(func() { n, _ = e.RunExpiryCycle() }) {
				t.Fatal("RunExpiryCycle stalled behind a blocked listener")
			}
			if n != 1 {
				t.Fatalf("RunExpiryCycle removed %d, want 1 (second)", n)
			}
			if c, ok := removed.Load("second"); !ok || c != engine.CauseExpired {
				t.Fatalf("removal of second: %v %v, want reported as expired", c, ok)
			}
		})
	}
}

// TestListenerPanicReachesCaller: a listener that panics during a caller's
// operation panics in that caller, whatever the expiry goroutine is doing
// at the time; only panics on the expiry goroutine are recovered and
// counted. The expiry goroutine runs back to back throughout.
func TestListenerPanicReachesCaller(t *testing.T) {
	const rounds = 300
	for _, tc := range []struct {
		name string
		// op makes the removal of key on the caller's goroutine; clk is
		// the engine's clock.
		op func(e *engine.Engine, clk *clock.Manual, key string)
	}{
		{"RunExpiryCycle", func(e *engine.Engine, clk *clock.Manual, key string) {
			e.SetTTL(key, []byte("v"), time.Second)
			clk.Advance(time.Second)
			for {
				if _, more := e.RunExpiryCycle(); !more {
					break
				}
			}
		}},
		{"Get (lazy expiry)", func(e *engine.Engine, clk *clock.Manual, key string) {
			e.SetTTL(key, []byte("v"), time.Second)
			clk.Advance(time.Second)
			e.Get(key)
		}},
		{"Set (replaced)", func(e *engine.Engine, _ *clock.Manual, key string) {
			e.Set(key, []byte("v"))
			e.Set(key, []byte("w"))
		}},
		{"Delete", func(e *engine.Engine, _ *clock.Manual, key string) {
			e.Set(key, []byte("v"))
			e.Delete(key)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(badStart)
			var caller atomic.Uint64
			var raised atomic.Int64
			e, err := engine.New(engine.Config{Shards: 1, Clock: clk, ExpiryInterval: time.Nanosecond,
				OnRemove: func(r engine.Removal) {
					if strings.HasPrefix(r.Key, "boom") && testGoroutineID() == caller.Load() {
						raised.Add(1)
						panic("listener panic on " + r.Key)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			caller.Store(testGoroutineID())
			var reached int64
			for i := range rounds {
				func() {
					defer func() {
						if recover() != nil {
							reached++
						}
					}()
					tc.op(e, clk, fmt.Sprint("boom", i))
				}()
			}
			if reached != raised.Load() {
				t.Fatalf("%d listener panics on the caller's goroutine, %d reached the caller", raised.Load(), reached)
			}
			if st := e.Stats(); st.ListenerPanics != 0 {
				t.Fatalf("ListenerPanics = %d, want 0: a caller's panic was recovered", st.ListenerPanics)
			}
			mustCheck(t, e)
		})
	}
}
