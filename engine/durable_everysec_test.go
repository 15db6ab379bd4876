package engine

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// TestEverySecondOSCrashLosesOnlyTheUnsyncedTail guards what
// SyncEverySecond promises for an OS crash, simulated by faultfs (which
// keeps a file up to its last fsync and a random prefix of what was
// written after): every write acknowledged before a background fsync
// began survives, with its version; of the later ones, what survives is a
// prefix in acknowledgement order (never a later write without an
// earlier one); and no version is handed out again. The background
// fsyncs are observed through the file system's hook, not waited for by
// time; that they come every SyncInterval (so that the unsynced tail is
// about SyncInterval long) is the ticker's job and is not asserted here.
func TestEverySecondOSCrashLosesOnlyTheUnsyncedTail(t *testing.T) {
	for seed := range uint64(20) {
		fs := faultfs.New()
		clk := clock.NewManual(t0)
		cfg := Config{Shards: 4, Durability: Durability{Sync: SyncEverySecond, SyncInterval: time.Millisecond}}
		e := mustOpenDurable(t, fs, "", clk, cfg)
		type ack struct {
			key string
			ver uint64
		}
		var acked []ack
		write := func(phase string, n int) {
			for i := range n {
				k := fmt.Sprintf("%s%d", phase, i)
				v, err := e.Set(k, []byte(k))
				if err != nil {
					t.Fatal(err)
				}
				acked = append(acked, ack{k, v})
			}
		}
		syncs := make(chan struct{}, 1)
		// waitSync waits for a background fsync that begins after it is
		// called. It first writes a marker (acknowledged like any write),
		// so that the log has something to sync: the background syncer
		// may already have synced everything before the hook was set.
		waitSync := func(marker string) {
			fs.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
				if op == faultfs.OpSync {
					select {
					case syncs <- struct{}{}:
					default:
					}
				}
				return nil
			})
			write(marker, 1)
			select {
			case <-syncs:
			case <-time.After(time.Minute): // a failsafe, not a measure
				t.Fatal("no background fsync within a minute")
			}
			fs.SetHook(nil)
		}
		write("a", 50)
		durable := len(acked)
		// This fsync began after every "a" write: once the next one has
		// begun (fsyncs are serialized) it has finished.
		waitSync("am")
		write("b", 50)
		waitSync("bm")
		write("c", 50)
		after := fs.Crash(seed)
		e.Close()
		e2 := mustOpenDurable(t, after, "", clk, cfg)
		got := dump(e2)
		survived := 0
		for i, a := range acked {
			it, ok := got[a.key]
			if ok && it.Version != a.ver {
				t.Fatalf("seed %d: %q came back at version %d, acknowledged at %d", seed, a.key, it.Version, a.ver)
			}
			switch {
			case i < durable && !ok:
				t.Fatalf("seed %d: %q, acknowledged before a completed background fsync, lost", seed, a.key)
			case ok && survived != i:
				t.Fatalf("seed %d: %q survived but the write before it (%q) did not", seed, a.key, acked[i-1].key)
			case ok:
				survived++
			}
		}
		if len(got) != survived {
			t.Fatalf("seed %d: %d entries recovered, %d acknowledged ones", seed, len(got), survived)
		}
		vers := make([]uint64, len(acked))
		for i, a := range acked {
			vers[i] = a.ver
		}
		for i := range 20 {
			v, err := e2.Set(fmt.Sprint("new", i), []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(vers, v) {
				t.Fatalf("seed %d: version %d handed out again after the crash", seed, v)
			}
		}
		e2.Close()
	}
}

// TestCommitSyncIsDurableUnderEveryPolicy guards Op.Sync: a commit with
// it survives an OS crash under SyncEverySecond and SyncNo (with every
// write before it), and a failed fsync fails it with ErrLogFailed and
// nothing in memory.
func TestCommitSyncIsDurableUnderEveryPolicy(t *testing.T) {
	for _, p := range []SyncPolicy{SyncEverySecond, SyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			clk := clock.NewManual(t0)
			cfg := Config{Shards: 4, Durability: Durability{Sync: p, SyncInterval: time.Hour}}
			for seed := range uint64(10) {
				fs := faultfs.New()
				e := mustOpenDurable(t, fs, "", clk, cfg)
				before, err := e.Set("before", []byte("x"))
				if err != nil {
					t.Fatal(err)
				}
				vs, ok, err := e.Commit(nil, []Op{{Key: "a", Value: []byte("1"), TTL: NoTTL, Sync: true}, {Key: "b", Value: []byte("2"), TTL: NoTTL}})
				if err != nil || !ok {
					t.Fatalf("Commit: %v %v", ok, err)
				}
				e2 := mustOpenDurable(t, fs.Crash(seed), "", clk, cfg)
				for k, v := range map[string]uint64{"before": before, "a": vs[0], "b": vs[1]} {
					if it, ok := e2.GetItem(k); !ok || it.Version != v {
						t.Fatalf("seed %d: %q = %+v, %v after an OS crash; want version %d", seed, k, it, ok, v)
					}
				}
				e2.Close()
				e.Close()
			}
			fs := faultfs.New()
			e := mustOpenDurable(t, fs, "", clk, cfg)
			defer e.Close()
			fs.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
				if op == faultfs.OpSync {
					return &faultfs.Fault{Err: syscall.EIO}
				}
				return nil
			})
			if _, _, err := e.Commit(nil, []Op{{Key: "a", Value: []byte("1"), TTL: NoTTL, Sync: true}}); !errors.Is(err, ErrLogFailed) {
				t.Fatalf("Commit with a failed fsync: %v, want ErrLogFailed", err)
			}
			if e.Len() != 0 {
				t.Fatal("a commit whose fsync failed changed memory")
			}
		})
	}
}
