package aof_test

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// TestEverySecondSyncsInBackground: with SyncEverySecond a record becomes
// durable without any call, by the background fsync; a crash after that
// fsync keeps it. The test waits for the fsync through the file system's
// hook, not by sleeping.
func TestEverySecondSyncsInBackground(t *testing.T) {
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncEverySecond, SyncInterval: time.Millisecond}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{}, 1)
	if err := l.Append(set("a", "1", 1)); err != nil {
		t.Fatal(err)
	}
	fsys.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
		if op == faultfs.OpSync {
			select {
			case synced <- struct{}{}:
			default:
			}
		}
		return nil
	})
	<-synced
	// The hook runs before the sync takes effect: wait for the next one,
	// which starts only after the first has finished.
	if err := l.Append(set("b", "2", 2)); err != nil {
		t.Fatal(err)
	}
	<-synced
	after := fsys.Crash(1)
	l.Close()
	got := state{}
	if _, _, err := aof.Open(aof.Config{FS: after}, 0, got.apply); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["a"]; !ok {
		t.Errorf("record synced in the background lost in a crash: got %v", got)
	}
}

// TestBackgroundSyncFailureFailsLog: a failed background fsync fails the
// log, and the next append says so.
func TestBackgroundSyncFailureFailsLog(t *testing.T) {
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncEverySecond, SyncInterval: time.Millisecond}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hit := make(chan struct{})
	var once sync.Once
	fsys.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
		if op == faultfs.OpSync {
			once.Do(func() { close(hit) })
			return &faultfs.Fault{Err: syscall.EIO}
		}
		return nil
	})
	if err := l.Append(set("a", "1", 1)); err != nil {
		t.Fatal(err)
	}
	<-hit
	for l.Err() == nil { // the failure is recorded right after the hook returns
		runtimeGosched()
	}
	if err := l.Append(set("b", "2", 2)); !errors.Is(err, aof.ErrFailed) {
		t.Errorf("Append after a failed background fsync = %v, want ErrFailed", err)
	}
}

// TestAppendSyncDurableUnderSyncNo: AppendSync's record survives a crash
// even with SyncNo.
func TestAppendSyncDurableUnderSyncNo(t *testing.T) {
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncNo}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(set("a", "1", 1))
	if err := l.AppendSync(&aof.Record{Op: aof.OpVersions, Versions: []uint64{1 << 20}}); err != nil {
		t.Fatal(err)
	}
	l.Append(set("lost", "maybe", 2))
	for seed := range uint64(5) {
		got := state{}
		_, rep, err := aof.Open(aof.Config{FS: fsys.Crash(seed)}, 0, got.apply)
		if err != nil {
			t.Fatal(err)
		}
		if rep.MaxVersion < 1<<20 || got["a"].Version != 1 {
			t.Errorf("seed %d: MaxVersion %d, a = %+v; want the reservation and a durable", seed, rep.MaxVersion, got["a"])
		}
	}
}

// TestCloseDuringAppends: appends racing Close either succeed (and are
// recovered) or return ErrClosed; Close waits for those in flight.
func TestCloseDuringAppends(t *testing.T) {
	for _, p := range []aof.SyncPolicy{aof.SyncAlways, aof.SyncEverySecond, aof.SyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			dir := t.TempDir()
			l, _, err := aof.Open(aof.Config{Dir: dir, Sync: p}, 0, state{}.apply)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			acked := state{}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := 0; ; i++ {
						r := set(fmt.Sprintf("w%d-%d", w, i), "v", uint64(i+1))
						err := l.Append(r)
						if errors.Is(err, aof.ErrClosed) {
							return
						}
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						acked.apply(r)
						mu.Unlock()
					}
				}()
			}
			close(start)
			for range 50 {
				mu.Lock()
				n := len(acked)
				mu.Unlock()
				if n > 100 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			got := state{}
			l2, _, err := aof.Open(aof.Config{Dir: dir}, 0, got.apply)
			if err != nil {
				t.Fatal(err)
			}
			l2.Close()
			got.equal(t, acked)
		})
	}
}

// TestOpenConfigErrors: nonsense configuration is ErrInvalidConfig.
func TestOpenConfigErrors(t *testing.T) {
	for _, cfg := range []aof.Config{
		{},
		{FS: faultfs.New(), Sync: 9},
		{FS: faultfs.New(), SyncInterval: -1},
	} {
		if _, _, err := aof.Open(cfg, 0, state{}.apply); !errors.Is(err, aof.ErrInvalidConfig) {
			t.Errorf("Open(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// TestInvalidRecords: records that cannot be encoded are refused before
// anything is written, and the log stays usable.
func TestInvalidRecords(t *testing.T) {
	l, _, err := aof.Open(aof.Config{FS: faultfs.New(), Sync: aof.SyncAlways}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, r := range []*aof.Record{
		{},
		{Op: 42},
		{Op: aof.OpRemove, Key: "a"},
		{Op: aof.OpRemove, Key: "a", Cause: 9},
		{Op: aof.OpBatch, Batch: []aof.Record{{Op: aof.OpBatch}}},
		{Op: aof.OpBatch, Batch: []aof.Record{{Op: aof.OpVersions}}},
		{Op: aof.OpBatch, Batch: []aof.Record{*set("ok", "v", 1), {Op: 42}}},
	} {
		if err := l.Append(r); !errors.Is(err, aof.ErrInvalidRecord) {
			t.Errorf("Append(%+v) = %v, want ErrInvalidRecord", r, err)
		}
	}
	if err := l.Append(set("a", "b", 1)); err != nil {
		t.Fatalf("Append after refused records = %v", err)
	}
}

// TestDirectoryLocked: a second log on the same directory (two instances
// sharing it would interleave appends) is refused with ErrLocked until the
// first closes.
func TestDirectoryLocked(t *testing.T) {
	dir := t.TempDir()
	l, _, err := aof.Open(aof.Config{Dir: dir}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := aof.Open(aof.Config{Dir: dir}, 0, state{}.apply); !errors.Is(err, aof.ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if err := l.Append(set("a", "1", 1)); err != nil {
		t.Fatalf("first log after a refused second Open: %v", err)
	}
	l.Close()
	got := state{}
	l2, _, err := aof.Open(aof.Config{Dir: dir}, 0, got.apply)
	if err != nil {
		t.Fatalf("Open after Close = %v", err)
	}
	l2.Close()
	got.equal(t, state{"a": *set("a", "1", 1)})
}
