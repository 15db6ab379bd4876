package featureflag_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// TestWatcherPanicOnPollerIsRecovered: a watcher that panics on the poller
// goroutine (a change made elsewhere) does not crash the process: the
// panic is counted and reported with the flag's name (ErrWatcherPanic),
// the other watchers of the change still run, and the poller keeps
// delivering later changes.
func TestWatcherPanicOnPollerIsRecovered(t *testing.T) {
	ctx := context.Background()
	b, _ := storetest.NewEmbedded(t)
	logs, logger := storetest.NewLogs()
	var mu sync.Mutex
	var hooked []error
	here, err := featureflag.New(featureflag.Config{Backend: b, MaxStaleness: time.Millisecond, Logger: logger,
		OnError: func(_ context.Context, name string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if name == "pay" {
				hooked = append(hooked, err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	there, err := featureflag.New(featureflag.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	f, err := here.Create(ctx, "pay", featureflag.State{Enabled: true}, "ana", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := here.Watch("pay", func(featureflag.Flag) { panic("watcher bug") }); err != nil {
		t.Fatal(err)
	}
	seen := make(chan uint64, 8)
	if _, err := here.Watch("pay", func(f featureflag.Flag) { seen <- f.Revision }); err != nil {
		t.Fatal(err)
	}
	for range 2 { // seen only by here's poller
		if f, err = there.Update(ctx, f, featureflag.State{Enabled: !f.State.Enabled}, "bo", ""); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-seen:
			if r != f.Revision {
				t.Errorf("watcher saw revision %d, want %d", r, f.Revision)
			}
		case <-time.After(5 * time.Second): // only on failure
			t.Fatalf("revision %d never reached the second watcher", f.Revision)
		}
	}
	if n := here.WatcherPanics(); n != 2 {
		t.Errorf("WatcherPanics = %d, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooked) != 2 || !errors.Is(hooked[0], featureflag.ErrWatcherPanic) {
		t.Errorf("OnError got %v, want two ErrWatcherPanic", hooked)
	}
	if recs := logs.Records(); len(recs) == 0 || recs[0].Msg != "tide: flag watcher panicked" || recs[0].Attrs["key"] != "pay" {
		t.Errorf("log records %+v, want the panic with the flag's name", recs)
	}
}

// TestWatcherPanicOnCallerReachesCaller: a watcher run on the writer's
// goroutine (a write through this Store) panics into the writer, which
// sees it (the write itself is done); the watchers it cut off are not
// lost: the next Refresh delivers the change to them.
func TestWatcherPanicOnCallerReachesCaller(t *testing.T) {
	ctx := context.Background()
	b, _ := storetest.NewEmbedded(t)
	s, err := featureflag.New(featureflag.Config{Backend: b, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.Create(ctx, "pay", featureflag.State{Enabled: true}, "ana", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Watch("pay", func(featureflag.Flag) { panic("watcher bug") }); err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	if _, err := s.Watch("pay", func(f featureflag.Flag) { seen = append(seen, f.Revision) }); err != nil {
		t.Fatal(err)
	}
	var got any
	func() {
		defer func() { got = recover() }()
		s.Kill(ctx, "pay", "oncall", "")
	}()
	if got != "watcher bug" {
		t.Fatalf("Kill with a panicking watcher: recovered %v, want the watcher's panic", got)
	}
	if g, _, err := s.Get(ctx, "pay"); err != nil || !g.State.Killed || g.Revision != f.Revision+1 {
		t.Fatalf("after the panic: got (%+v, %v), want the kill written", g, err)
	}
	if s.WatcherPanics() != 0 {
		t.Errorf("WatcherPanics = %d, want 0 (the caller saw it)", s.WatcherPanics())
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != f.Revision+1 {
		t.Errorf("the watcher cut off by the panic saw %v, want [%d] after Refresh", seen, f.Revision+1)
	}
}
