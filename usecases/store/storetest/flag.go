package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/usecases/featureflag"
)

// RunFlag runs package featureflag's contract suite on a backend.
func RunFlag(t *testing.T, newFixture NewFunc) {
	newFixture = instrument(newFixture)
	ctx := context.Background()
	newStore := func(t *testing.T, f Fixture, local clock.Clock) *featureflag.Store {
		t.Helper()
		s, err := featureflag.New(featureflag.Config{Backend: f.Backend, MaxStaleness: time.Second, LocalClock: local, AuditKeep: 50})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("VersionedWritesAndAudit", func(t *testing.T) {
		f := newFixture(t)
		s := newStore(t, f, nil)
		f1, err := s.Create(ctx, "checkout-v2", featureflag.State{Enabled: true, Rollout: 1000}, "ana", "launch 10%")
		if err != nil || f1.Revision != 1 {
			t.Fatalf("Create: got (%+v, %v), want revision 1", f1, err)
		}
		if _, err := s.Create(ctx, "checkout-v2", featureflag.State{}, "ana", ""); !errors.Is(err, featureflag.ErrExists) {
			t.Fatalf("second Create: got %v, want ErrExists", err)
		}
		// Two admins read revision 1; the first write wins, the stale one is
		// rejected.
		a, _, _ := s.Get(ctx, "checkout-v2")
		b, _, _ := s.Get(ctx, "checkout-v2")
		f2, err := s.Update(ctx, a, featureflag.State{Enabled: true, Rollout: 5000}, "ana", "50%")
		if err != nil || f2.Revision != 2 {
			t.Fatalf("Update: got (%+v, %v), want revision 2", f2, err)
		}
		if _, err := s.Update(ctx, b, featureflag.State{Enabled: false}, "bo", "turn off"); !errors.Is(err, featureflag.ErrConflict) {
			t.Fatalf("stale Update: got %v, want ErrConflict", err)
		}
		if _, err := s.Kill(ctx, "checkout-v2", "oncall", "errors spiking"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Rollback(ctx, "checkout-v2", 1, "ana", ""); err != nil {
			t.Fatal(err)
		}
		got, _, _ := s.Get(ctx, "checkout-v2")
		if got.Revision != 4 || got.State != (featureflag.State{Enabled: true, Rollout: 1000}) {
			t.Fatalf("after rollback to 1: got rev %d %+v, want rev 4 with revision 1's state", got.Revision, got.State)
		}
		hist, err := s.History(ctx, "checkout-v2")
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			rev    uint64
			actor  string
			killed bool
			before bool
		}{{1, "ana", false, false}, {2, "ana", false, true}, {3, "oncall", true, true}, {4, "ana", false, true}}
		if len(hist) != len(want) {
			t.Fatalf("history: got %d records, want %d", len(hist), len(want))
		}
		for i, w := range want {
			h := hist[i]
			if h.Revision != w.rev || h.Actor != w.actor || h.After.Killed != w.killed || (h.Before != nil) != w.before {
				t.Errorf("history[%d]: got %+v, want rev %d by %s killed %v", i, h, w.rev, w.actor, w.killed)
			}
		}
		if _, err := s.Rollback(ctx, "checkout-v2", 99, "ana", ""); !errors.Is(err, featureflag.ErrInvalidFlag) {
			t.Fatalf("rollback to an unknown revision: got %v, want ErrInvalidFlag", err)
		}
		if _, err := s.Create(ctx, "x", featureflag.State{Rollout: 10001}, "ana", ""); !errors.Is(err, featureflag.ErrInvalidFlag) {
			t.Fatalf("rollout 10001: got %v, want ErrInvalidFlag", err)
		}
	})
	t.Run("RolloutIsMonotone", func(t *testing.T) {
		f := newFixture(t)
		s := newStore(t, f, nil)
		s.Create(ctx, "beta", featureflag.State{Enabled: true}, "ana", "")
		in := map[string]bool{}
		for _, bp := range []int{0, 100, 1000, 2500, 5000, 10000} {
			fl, err := s.SetRollout(ctx, "beta", bp, "ana", "")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for u := range 2000 {
				unit := fmt.Sprint("user-", u)
				on := fl.On(unit)
				if in[unit] && !on {
					t.Fatalf("raising the rollout to %d dropped %s", bp, unit)
				}
				in[unit] = on
				if on {
					n++
				}
			}
			if want := 2000 * bp / 10000; n < want-150 || n > want+150 {
				t.Errorf("rollout %d: %d of 2000 units in, want about %d", bp, n, want)
			}
		}
		fl, _, _ := s.Get(ctx, "beta")
		if !fl.On("user-1") {
			t.Fatal("100% rollout left a unit out")
		}
		s.Kill(ctx, "beta", "oncall", "")
		if fl, _, _ := s.Get(ctx, "beta"); fl.On("user-1") {
			t.Fatal("killed flag is on")
		}
	})
	t.Run("ArbitraryBytesRoundTrip", func(t *testing.T) {
		f := newFixture(t)
		s := newStore(t, f, nil)
		// A salt that changed on the round trip would move units between
		// buckets: raising the rollout must keep everyone who was in.
		st := featureflag.State{Enabled: true, Rollout: 2500, Salt: "\xdd\xd1\xaa"}
		f1, err := s.Create(ctx, "\xff-flag", st, "\xfeactor", "\x80reason")
		if err != nil {
			t.Fatal(err)
		}
		f2, err := s.SetRollout(ctx, "\xff-flag", 7500, "a", "")
		if err != nil {
			t.Fatal(err)
		}
		if f2.Salt != st.Salt {
			t.Fatalf("salt after a write: got %q, want %q", f2.Salt, st.Salt)
		}
		for u := range 500 {
			unit := fmt.Sprint("\x00{}\r\n;=,\" é", u)
			if f1.On(unit) && !f2.On(unit) {
				t.Fatalf("raising the rollout dropped %q", unit)
			}
		}
		hist, _ := s.History(ctx, "\xff-flag")
		if len(hist) != 2 || hist[0].Actor != "\xfeactor" || hist[0].Reason != "\x80reason" || hist[1].Before.Salt != st.Salt {
			t.Fatalf("audit round trip: got %+v", hist)
		}
	})
	t.Run("CacheStalenessAndWatchers", func(t *testing.T) {
		f := newFixture(t)
		local := clock.NewManual(time.Unix(0, 0))
		here := newStore(t, f, local)
		there := newStore(t, f, nil) // another process on the same backend
		here.Create(ctx, "pay", featureflag.State{Enabled: true, Rollout: 10000}, "ana", "")
		var seen atomic.Uint64
		stop, err := here.Watch("pay", func(fl featureflag.Flag) { seen.Store(fl.Revision) })
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if !here.Enabled(ctx, "pay", "u1") {
			t.Fatal("flag off before the kill")
		}
		if _, err := there.Kill(ctx, "pay", "oncall", "incident"); err != nil {
			t.Fatal(err)
		}
		// Within MaxStaleness, this process may still serve the old state...
		local.Advance(500 * time.Millisecond)
		if !here.Enabled(ctx, "pay", "u1") {
			t.Log("cache refreshed early (allowed)")
		}
		// ...but not after it.
		local.Advance(500 * time.Millisecond)
		if here.Enabled(ctx, "pay", "u1") {
			t.Fatal("kill switch not visible after MaxStaleness")
		}
		if err := here.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if seen.Load() != 2 {
			t.Fatalf("watcher: saw revision %d, want 2 (the kill)", seen.Load())
		}
		here.Unkill(ctx, "pay", "oncall", "fixed")
		if seen.Load() != 3 {
			t.Fatalf("watcher after a local write: saw revision %d, want 3 at once", seen.Load())
		}
		if !here.Enabled(ctx, "pay", "u1") {
			t.Fatal("a local write did not update the local cache")
		}
		if here.Enabled(ctx, "missing", "u1") {
			t.Fatal("a missing flag is on")
		}
	})
	t.Run("ConcurrentWritersNeverLoseAudit", func(t *testing.T) {
		f := newFixture(t)
		s := newStore(t, f, nil)
		s.Create(ctx, "counter", featureflag.State{}, "init", "")
		var wg sync.WaitGroup
		const n = 16
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Modify(ctx, "counter", func(st *featureflag.State) error { st.Rollout++; return nil }, fmt.Sprint("w", i), ""); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		fl, _, _ := s.Get(ctx, "counter")
		hist, _ := s.History(ctx, "counter")
		if fl.Rollout != n || fl.Revision != n+1 || len(hist) != n+1 {
			t.Fatalf("after %d concurrent increments: rollout %d, revision %d, %d audit records; want %d, %d, %d", n, fl.Rollout, fl.Revision, len(hist), n, n+1, n+1)
		}
		for i, h := range hist {
			if h.Revision != uint64(i+1) || h.After.Rollout != i {
				t.Fatalf("audit[%d]: got rev %d rollout %d, want rev %d rollout %d", i, h.Revision, h.After.Rollout, i+1, i)
			}
		}
	})
}
