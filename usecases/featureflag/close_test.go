package featureflag_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// hungGet is a Backend whose Gets, once hung, block until their context
// ends: a store that stopped answering, with no timeout of its own.
type hungGet struct {
	featureflag.Backend
	mu      sync.Mutex
	hung    bool
	entered chan struct{} // receives once per hung Get
}

func (h *hungGet) Get(ctx context.Context, key string) (store.Item, bool, error) {
	h.mu.Lock()
	hung := h.hung
	h.mu.Unlock()
	if !hung {
		return h.Backend.Get(ctx, key)
	}
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return store.Item{}, false, ctx.Err()
}

// Close waits for the poller to end, which it does in bounded time once
// Close has begun: a poll blocked in a store read that does not return
// (a store with no timeout of its own) must not hang Close forever.
func TestCloseDoesNotWaitForAHungPoll(t *testing.T) {
	ctx := context.Background()
	b, _ := storetest.NewEmbedded(t)
	hb := &hungGet{Backend: b, entered: make(chan struct{}, 1)}
	s, err := featureflag.New(featureflag.Config{Backend: hb, MaxStaleness: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "pay", featureflag.State{Enabled: true}, "ana", ""); err != nil {
		t.Fatal(err)
	}
	hb.mu.Lock()
	hb.hung = true
	hb.mu.Unlock()
	if _, err := s.Watch("pay", func(featureflag.Flag) {}); err != nil {
		t.Fatal(err)
	}
	<-hb.entered // the poller is in a read that will not return by itself
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second): // a hang detector, not a wait
		t.Fatal("Close did not return while the poller's store read hung: got a hang, want Close to end the poll")
	}
}
