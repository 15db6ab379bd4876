package aof_test

import (
	"syscall"
	"testing"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// unlocked is a faultfs.FS whose Lock always succeeds: a log abandoned
// without Close (a process crash: the kernel releases its flock, the page
// cache keeps what it wrote) leaves the directory to the next Open.
type unlocked struct{ *faultfs.FS }

func (unlocked) Lock() (func() error, error) { return func() error { return nil }, nil }

// TestOpenSyncsEveryLogItReplays: Open promises that what it replayed is
// durable before it returns ("a recovered state is not lost again by a
// later power failure"). A switch whose manifest rename happened but whose
// directory fsync failed leaves appends going to the old incremental log,
// unsynced under SyncNo, while the manifest names the old log and a new,
// empty one. After a process crash, Open replays the old log's unsynced
// records as a non-last log: it must fsync them, or a power failure after
// the restart loses records the restart served, while records appended
// after the restart (to the new log, synced) survive: a later write
// without an earlier one, or a "corrupt" log that Open refuses.
func TestOpenSyncsEveryLogItReplays(t *testing.T) {
	for seed := uint64(0); seed < 16; seed++ {
		fsys := faultfs.New()
		l, _, err := aof.Open(aof.Config{FS: unlocked{fsys}, Sync: aof.SyncNo}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		want := state{}
		app := func(l *aof.Log, r *aof.Record) {
			t.Helper()
			if err := l.Append(r); err != nil {
				t.Fatalf("Append %q: %v", r.Key, err)
			}
			want.apply(r)
		}
		app(l, set("a", "1", 1))
		// The rewrite's second directory fsync is the switch's manifest
		// (the first makes the new log's entry durable).
		dirSyncs := 0
		fsys.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
			if op != faultfs.OpSyncDir {
				return nil
			}
			if dirSyncs++; dirSyncs == 2 {
				return &faultfs.Fault{Err: syscall.EIO}
			}
			return nil
		})
		if _, err := l.Rewrite(fixedSrc{}); err == nil {
			t.Fatal("Rewrite with a failing directory fsync: got nil error")
		}
		fsys.SetHook(nil)
		app(l, set("b", "2", 2)) // to the old log, not synced (SyncNo)
		// Process crash: l is abandoned; the restart sees the page cache.
		got := state{}
		l2, _, err := aof.Open(aof.Config{FS: unlocked{fsys}, Sync: aof.SyncAlways}, 0, got.apply)
		if err != nil {
			t.Fatalf("seed %d: reopen after the process crash: %v", seed, err)
		}
		got.equal(t, want)
		app(l2, set("c", "3", 3)) // SyncAlways: durable when acknowledged
		// Power failure.
		after := fsys.Crash(seed)
		got = state{}
		l3, _, err := aof.Open(aof.Config{FS: after}, 0, got.apply)
		if err != nil {
			t.Fatalf("seed %d: open after the power failure: got %v, want the recovered state and c", seed, err)
		}
		l3.Close()
		got.equal(t, want)
	}
}

// fixedSrc is an empty Source.
type fixedSrc struct{}

func (fixedSrc) Versions() []uint64                    { return nil }
func (fixedSrc) Records(func(*aof.Record) error) error { return nil }
