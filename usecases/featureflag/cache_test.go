package featureflag_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// pausedGet is a Backend whose next Get, once armed, reads the store and
// then waits (read, then release) before returning what it read: a read
// in flight while other things happen.
type pausedGet struct {
	featureflag.Backend
	armed         chan struct{} // closed by the Get that pauses, after its read
	read, release chan struct{}
}

func newPausedGet(b featureflag.Backend) *pausedGet {
	return &pausedGet{Backend: b, armed: make(chan struct{}, 1), read: make(chan struct{}), release: make(chan struct{})}
}

func (p *pausedGet) arm() { p.armed <- struct{}{} }

func (p *pausedGet) Get(ctx context.Context, key string) (store.Item, bool, error) {
	it, ok, err := p.Backend.Get(ctx, key)
	select {
	case <-p.armed:
		close(p.read)
		<-p.release
	default:
	}
	return it, ok, err
}

// A write through this Store updates its own cache at once: a Cached read
// that found no flag, in flight while the flag is created here, must not
// leave "no flag" in the cache over the creation, so that the next Cached
// (and Enabled) sees the flag at once.
func TestCachedMissInFlightDoesNotHideLocalCreate(t *testing.T) {
	ctx := context.Background()
	b, _ := storetest.NewEmbedded(t)
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pb := newPausedGet(b)
	s, err := featureflag.New(featureflag.Config{Backend: pb, LocalClock: clk, MaxStaleness: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pb.arm()
	done := make(chan bool)
	go func() {
		_, found, err := s.Cached(ctx, "pay")
		if err != nil {
			t.Error(err)
		}
		done <- found
	}()
	<-pb.read // the read saw no flag
	if _, err := s.Create(ctx, "pay", featureflag.State{Enabled: true, Rollout: featureflag.Buckets}, "ana", ""); err != nil {
		t.Fatal(err)
	}
	close(pb.release)
	<-done
	f, found, err := s.Cached(ctx, "pay")
	if err != nil || !found || f.Revision != 1 {
		t.Errorf("Cached after a local Create: got found=%v revision=%d err=%v, want found revision 1", found, f.Revision, err)
	}
	if !s.Enabled(ctx, "pay", "u1") {
		t.Error("Enabled after a local Create of a flag on for everyone: got false, want true")
	}
}

// Cached serves a copy at most MaxStaleness old: the age of a copy counts
// from when it was read from the store, not from when the read returned.
// A kill switch thrown elsewhere while a slow read was in flight takes
// effect here within MaxStaleness of the kill.
func TestCachedAgeCountsFromTheRead(t *testing.T) {
	ctx := context.Background()
	b, _ := storetest.NewEmbedded(t)
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pb := newPausedGet(b)
	const stale = time.Second
	here, err := featureflag.New(featureflag.Config{Backend: pb, LocalClock: clk, MaxStaleness: stale})
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	there, err := featureflag.New(featureflag.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	if _, err := there.Create(ctx, "pay", featureflag.State{Enabled: true, Rollout: featureflag.Buckets}, "ana", ""); err != nil {
		t.Fatal(err)
	}
	pb.arm()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, _, err := here.Cached(ctx, "pay"); err != nil {
			t.Error(err)
		}
	}()
	<-pb.read // here read the flag unkilled
	if _, err := there.Kill(ctx, "pay", "bo", "incident"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * stale) // the read is slow to return
	close(pb.release)
	<-done
	clk.Advance(stale / 2)
	// The kill is 10.5 MaxStaleness old, the copy read before it too.
	if here.Enabled(ctx, "pay", "u1") {
		t.Errorf("Enabled %v after a kill elsewhere (MaxStaleness %v): got true, want false", 10*stale+stale/2, stale)
	}
}
