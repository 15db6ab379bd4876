package featureflag_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// TestCloseFromWatcherOnPoller: a watcher that closes the Store while it
// runs on the poller goroutine (after a write elsewhere) must not deadlock
// (Close must not wait for the poller it runs on), and Close from another
// goroutine at the same time returns too.
func TestCloseFromWatcherOnPoller(t *testing.T) {
	ctx := context.Background()
	b, _ := storetest.NewEmbedded(t)
	here, err := featureflag.New(featureflag.Config{Backend: b, MaxStaleness: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	there, err := featureflag.New(featureflag.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	if _, err := here.Create(ctx, "pay", featureflag.State{Enabled: true}, "ana", ""); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	var once sync.Once
	if _, err := here.Watch("pay", func(featureflag.Flag) {
		once.Do(func() { here.Close(); close(closed) })
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := there.Kill(ctx, "pay", "oncall", ""); err != nil { // seen only by here's poller
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close called by a watcher on the poller goroutine deadlocked")
	}
	done := make(chan struct{})
	go func() { here.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a second Close did not return")
	}
}
