package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/internal/aof/faultfs"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// TestLeaseTokensStayMonotonicAcrossAnOSCrash guards lease fencing on a
// durable embedded engine under every fsync policy: an OS crash
// (faultfs: unsynced data is lost) may lose acknowledged writes under
// SyncEverySecond and SyncNo, but never a fencing token already handed
// out — a token issued again would let two holders pass the resource's
// check. No Floor is set.
func TestLeaseTokensStayMonotonicAcrossAnOSCrash(t *testing.T) {
	ctx := context.Background()
	for _, p := range []engine.SyncPolicy{engine.SyncAlways, engine.SyncEverySecond, engine.SyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			for seed := range uint64(10) {
				fs := faultfs.New()
				clk := clock.NewManual(time.Unix(1_700_000_000, 0))
				open := func(fs *faultfs.FS) (*engine.Engine, *lease.Manager) {
					// An hour between background fsyncs: the whole run is
					// the unsynced tail an OS crash may lose.
					cfg := engine.Config{Clock: clk, ExpiryInterval: -1, Durability: engine.Durability{
						Sync: p, SyncInterval: time.Hour, RewritePercent: engine.NoAutoRewrite}}
					engine.SetLogFS(&cfg.Durability, fs)
					e, err := engine.New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					b, err := embedded.New(embedded.Config{Engine: e})
					if err != nil {
						t.Fatal(err)
					}
					m, err := lease.New(lease.Config{Backend: b})
					if err != nil {
						t.Fatal(err)
					}
					return e, m
				}
				e, m := open(fs)
				var last uint64
				for range 5 {
					l, _, ok, err := m.Acquire(ctx, "job", "worker")
					if err != nil || !ok {
						t.Fatalf("Acquire: %v %v", ok, err)
					}
					last = l.Token
					if _, err := m.Release(ctx, l); err != nil {
						t.Fatal(err)
					}
				}
				after := fs.Crash(seed)
				e.Close()
				// The crash may have lost the last Release: let the
				// lease lapse.
				clk.Advance(24 * time.Hour)
				e2, m2 := open(after)
				l, _, ok, err := m2.Acquire(ctx, "job", "worker")
				if err != nil || !ok {
					t.Fatalf("Acquire after the crash: %v %v", ok, err)
				}
				if l.Token <= last {
					t.Fatalf("seed %d: token %d after an OS crash, not above %d handed out before", seed, l.Token, last)
				}
				e2.Close()
			}
		})
	}
}
