package engine

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// TestAutomaticRewriteBacksOff: a rewrite that fails every time (a full
// disk, a failing directory fsync) must not be retried at every check of
// the thresholds: each attempt switches to a new incremental log and
// writes a base until it fails. The automatic rewrite waits, doubling up
// to a cap, on the engine's clock; the failure stays reported; a success
// resets the wait; and no acknowledged write is lost.
func TestAutomaticRewriteBacksOff(t *testing.T) {
	faults := []struct {
		name  string
		fault func(op faultfs.Op, name string) *faultfs.Fault
	}{
		{"ENOSPC writing temporary files", func(op faultfs.Op, name string) *faultfs.Fault {
			if op == faultfs.OpWrite && strings.HasSuffix(name, ".tmp") {
				return &faultfs.Fault{Err: syscall.ENOSPC}
			}
			return nil
		}},
		{"directory fsync EIO", func(op faultfs.Op, name string) *faultfs.Fault {
			if op == faultfs.OpSyncDir {
				return &faultfs.Fault{Err: syscall.EIO}
			}
			return nil
		}},
	}
	for _, ft := range faults {
		t.Run(ft.name, func(t *testing.T) {
			fsys := faultfs.New()
			var failing atomic.Bool
			var attempts atomic.Int64
			fsys.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
				if op == faultfs.OpCreate && strings.HasPrefix(name, "incr-") {
					attempts.Add(1) // a rewrite's first step
				}
				if failing.Load() {
					return ft.fault(op, name)
				}
				return nil
			})
			clk := clock.NewManual(t0)
			cfg := Config{Durability: Durability{Sync: SyncAlways, RewritePercent: 1, RewriteMinSize: 1, RewriteCheckInterval: 1 << 62}}
			e := mustOpenDurable(t, fsys, "", clk, cfg)
			defer e.Close()
			want := map[string]string{}
			write := func(i int) {
				t.Helper()
				k, v := fmt.Sprint("k", i%50), fmt.Sprint("v", i)
				if _, err := e.Set(k, []byte(v)); err != nil {
					t.Fatalf("Set while rewrites fail: %v", err)
				}
				want[k] = v
			}
			for i := range 100 {
				write(i)
			}
			attempts.Store(0)
			failing.Store(true)
			check := func(kicks int, wantAttempts int64, wantFailures int) {
				t.Helper()
				for i := range kicks {
					write(i)
					kickRewriteLoop(e)
				}
				st := e.LogStats()
				if got := attempts.Load(); got != wantAttempts {
					t.Fatalf("%d rewrite attempts, want %d (stats %+v)", got, wantAttempts, st)
				}
				if st.RewriteFailures != wantFailures || (wantFailures > 0) != (st.RewriteErr != nil) {
					t.Fatalf("RewriteFailures %d, RewriteErr %v; want %d failures reported", st.RewriteFailures, st.RewriteErr, wantFailures)
				}
			}
			check(50, 1, 1) // the first check tries; the next 49 wait
			clk.Advance(rewriteBackoffMin)
			check(5, 2, 2)
			clk.Advance(rewriteBackoffMin) // half the second wait
			check(5, 2, 2)
			clk.Advance(rewriteBackoffMin)
			check(5, 3, 3)
			// The wait doubles up to its cap: one attempt per cap, however
			// many failures.
			for i := range 20 {
				clk.Advance(rewriteBackoffMax)
				check(3, int64(4+i), 4+i)
			}
			check(20, 23, 23)
			// A success resets the backoff: the next failure is retried
			// after the shortest wait.
			failing.Store(false)
			clk.Advance(rewriteBackoffMax)
			check(1, 24, 0)
			if st := e.LogStats(); st.Rewrites == 0 {
				t.Fatalf("no rewrite completed after the fault cleared: %+v", st)
			}
			failing.Store(true)
			check(3, 25, 1)
			clk.Advance(rewriteBackoffMin)
			check(3, 26, 2)
			failing.Store(false)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e2 := mustOpenDurable(t, fsys, "", clk, Config{})
			defer e2.Close()
			got := dump(e2)
			if len(got) != len(want) {
				t.Errorf("%d keys after reopening, want %d", len(got), len(want))
			}
			for k, v := range want {
				if string(got[k].Value) != v {
					t.Errorf("%q = %q after reopening, want %q", k, got[k].Value, v)
				}
			}
		})
	}
}
