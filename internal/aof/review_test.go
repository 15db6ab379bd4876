package aof_test

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"sync"
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

// gated wraps a faultfs.FS: before an fsync or a write of a log file it
// calls the matching function, outside the file system's lock, so that a
// test can hold one operation while others proceed.
type gated struct {
	*faultfs.FS
	sync, write func()
}

func (g *gated) Create(name string) (aof.File, error) {
	f, err := g.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return gatedFile{f, g}, nil
}

func (g *gated) Open(name string) (aof.File, error) {
	f, err := g.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return gatedFile{f, g}, nil
}

type gatedFile struct {
	aof.File
	g *gated
}

func (f gatedFile) Sync() error {
	if f.g.sync != nil {
		f.g.sync()
	}
	return f.File.Sync()
}

func (f gatedFile) WriteAt(p []byte, off int64) (int, error) {
	if f.g.write != nil {
		f.g.write()
	}
	return f.File.WriteAt(p, off)
}

// gate returns a function that blocks the first time it is called, until
// release is closed, having closed entered.
func gate() (fn func(), entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	return func() { once.Do(func() { close(entered); <-release }) }, entered, release
}

// inSyncActive counts the goroutines inside Log.syncActive.
func inSyncActive() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "aof.(*Log).syncActive(")
}

// failingSrc is a Source whose Records fails.
type failingSrc struct{}

func (failingSrc) Versions() []uint64 { return nil }
func (failingSrc) Records(func(*aof.Record) error) error {
	return errors.New("source failed")
}

// fixedSrc is an empty Source.
type fixedSrc struct{}

func (fixedSrc) Versions() []uint64                    { return nil }
func (fixedSrc) Records(func(*aof.Record) error) error { return nil }

// TestSyncRacingCloseReportsTheFinalSync: Close fsyncs everything
// appended before it returns. A Sync or AppendSync caught by Close must
// report that outcome: not a failed log (ErrFailed, from an fsync of the
// file Close closed), which makes the engine report a durable write as
// failed with its outcome unknown, and not ErrClosed for a record Close
// made durable, which makes the engine report "closed, nothing changed"
// for a write a restart then shows.
func TestSyncRacingCloseReportsTheFinalSync(t *testing.T) {
	spin := func(cond func() bool) {
		for !cond() {
			runtime.Gosched()
		}
	}
	t.Run("Sync past its check", func(t *testing.T) {
		fsys := faultfs.New()
		g := gated{FS: fsys}
		l, _, err := aof.Open(aof.Config{FS: &g, Sync: aof.SyncNo}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(set("a", "1", 1)); err != nil {
			t.Fatal(err)
		}
		var entered, release chan struct{}
		g.sync, entered, release = gate()
		first := make(chan error)
		go func() { first <- l.Sync() }() // holds the sync lock, blocked in fsync
		<-entered
		if err := l.Append(set("b", "2", 2)); err != nil {
			t.Fatal(err)
		}
		second := make(chan error)
		go func() { second <- l.Sync() }() // past the closed check, waits for the first
		spin(func() bool { return inSyncActive() == 2 })
		closed := make(chan error)
		go func() { closed <- l.Close() }()
		spin(func() bool { return aof.FileSwitchPending(l) }) // Close waits for the file
		close(release)
		if err := <-first; err != nil {
			t.Errorf("first Sync: %v", err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-second; err != nil && !errors.Is(err, aof.ErrClosed) {
			t.Errorf("Sync caught by Close: got %v, want nil or ErrClosed (Close synced)", err)
		}
		if err := l.Err(); err != nil {
			t.Errorf("after Close: log failed with %v, want nil (no fsync failed)", err)
		}
	})
	t.Run("AppendSync", func(t *testing.T) {
		fsys := faultfs.New()
		g := gated{FS: fsys}
		l, _, err := aof.Open(aof.Config{FS: &g, Sync: aof.SyncNo}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		var entered, release chan struct{}
		g.write, entered, release = gate()
		res := make(chan error)
		go func() { res <- l.AppendSync(set("a", "1", 1)) }() // blocked in its write
		<-entered
		closed := make(chan error)
		go func() { closed <- l.Close() }()
		spin(func() bool { return aof.Closing(l) })
		close(release)
		err = <-res
		if cerr := <-closed; cerr != nil {
			t.Fatalf("Close: %v", cerr)
		}
		got := state{}
		l2, _, oerr := aof.Open(aof.Config{FS: fsys.Crash(1)}, 0, got.apply)
		if oerr != nil {
			t.Fatal(oerr)
		}
		l2.Close()
		_, durable := got["a"]
		if durable != (err == nil) {
			t.Errorf("AppendSync caught by Close: got %v, and after a power failure the record is there: %v; want nil iff it is durable", err, durable)
		}
	})
}

// TestTruncateCorruptKeepsTheVersionsItDiscards: "Versions are never
// reused across restarts: ... Recovery.MaxVersion is the highest of all of
// them." TruncateCorrupt discards the records after a corruption, but the
// versions they handed out (and reserved) were acknowledged: callers hold
// them. Recovery.MaxVersion must still cover every version a readable
// discarded record carries, in the cut file and in the later logs it
// drops, or the engine hands them out again.
func TestTruncateCorruptKeepsTheVersionsItDiscards(t *testing.T) {
	tests := []struct {
		name  string
		later bool // the high versions are in a later incremental log
	}{
		{"same log", false},
		{"later log", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := faultfs.New()
			l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
			if err != nil {
				t.Fatal(err)
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(l.Append(&aof.Record{Op: aof.OpVersions, Versions: []uint64{100}}))
			must(l.Append(set("a", "1", 1)))
			must(l.Append(set("b", "2", 2)))
			if tt.later {
				// A rewrite whose base fails after the switch: the
				// manifest names incr-1 and incr-2, appends go to incr-2.
				if _, err := l.Rewrite(failingSrc{}); err == nil {
					t.Fatal("Rewrite of a failing source: got nil error")
				}
			}
			must(l.Append(&aof.Record{Op: aof.OpVersions, Versions: []uint64{5000}}))
			must(l.Append(set("c", "3", 4000)))
			must(l.Append(&aof.Record{Op: aof.OpBatch, Batch: []aof.Record{*set("d", "4", 4500)}}))
			must(l.Close())
			name := "incr-0000000001.log"
			flip(fsys, name, 16+8+13+8+2) // inside "a"'s frame: valid frames follow
			got := state{}
			l2, rep, err := aof.Open(aof.Config{FS: fsys, TruncateCorrupt: true}, 0, got.apply)
			if err != nil {
				t.Fatalf("Open with TruncateCorrupt: %v", err)
			}
			l2.Close()
			if rep.Corruption == nil {
				t.Fatal("no corruption reported")
			}
			if rep.MaxVersion < 5000 {
				t.Errorf("after discarding records with versions up to 5000: MaxVersion = %d, want ≥ 5000", rep.MaxVersion)
			}
		})
	}
}

// TestTornTailWithAFrameInsideItsValue: a write cut by a crash (a short
// write at kill -9, a prefix at power loss) leaves a partial frame; if the
// value being written holds the bytes of a valid frame (a user may store
// anything), the torn tail contains "a valid frame after an invalid one".
// Open must still cut it as a torn tail, not refuse the log as corrupt:
// nothing acknowledged was damaged, and the process must restart without
// TruncateCorrupt. (It used to be refused: the frame's length, which runs
// past the end of the file and agrees with the key and value lengths in
// its payload, now tells the cut apart from a damaged length field.)
func TestTornTailWithAFrameInsideItsValue(t *testing.T) {
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(set("a", "1", 1)); err != nil {
		t.Fatal(err)
	}
	inner, err := aof.AppendFrame(nil, set("x", "y", 9))
	if err != nil {
		t.Fatal(err)
	}
	value := append(append([]byte(nil), inner...), make([]byte, 100)...)
	if err := l.Append(&aof.Record{Op: aof.OpSet, Key: "b", Value: value, Version: 2}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	chop(fsys, "incr-0000000001.log", 50) // the write of "b" cut after the inner frame
	got := state{}
	l2, rep, err := aof.Open(aof.Config{FS: fsys}, 0, got.apply)
	if err != nil {
		t.Fatalf("Open of a log whose last write, holding a valid frame in its value, was cut: %v; want the torn tail cut", err)
	}
	l2.Close()
	if rep.TornBytes == 0 {
		t.Errorf("TornBytes = 0, want the cut write")
	}
	got.equal(t, state{"a": *set("a", "1", 1)})
}

// TestCutShortFrames: the same for the other ways a cut write can hold a
// valid frame (in a batch's op, cut there or in a later op, zeros after a
// cut), and the damage that must still be corruption: a length field
// changed in the middle of the log so that the frame overruns the file,
// with valid frames (in its value and after it) in its claimed payload.
func TestCutShortFrames(t *testing.T) {
	inner, err := aof.AppendFrame(nil, set("x", "y", 9))
	if err != nil {
		t.Fatal(err)
	}
	holding := append(append([]byte(nil), inner...), make([]byte, 100)...)
	big := &aof.Record{Op: aof.OpSet, Key: "b", Value: holding, Version: 2}
	batch := &aof.Record{Op: aof.OpBatch, Batch: []aof.Record{
		{Op: aof.OpSet, Key: "b1", Value: holding, Version: 2},
		{Op: aof.OpRemove, Key: "zz", Version: 1, Cause: aof.CauseDeleted},
		{Op: aof.OpSet, Key: "b2", Value: []byte("tail value"), Version: 3},
	}}
	after := []*aof.Record{set("c", "3", 4), set("d", "4", 5)}
	frame := func(r *aof.Record) []byte {
		b, err := aof.AppendFrame(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bigLen, batchLen := len(frame(big)), len(frame(batch))
	tests := []struct {
		name    string
		recs    []*aof.Record                    // after "a"
		damage  func(b []byte, start int) []byte // start: offset of recs[0]
		corrupt bool
	}{
		{"batch cut inside its first op", []*aof.Record{batch}, func(b []byte, start int) []byte {
			return b[:start+8+5+len(inner)+60]
		}, false},
		{"batch cut inside a later op's fields", []*aof.Record{batch}, func(b []byte, start int) []byte {
			return b[:len(b)-len("tail value")-20]
		}, false},
		{"batch cut inside its last value", []*aof.Record{batch}, func(b []byte, start int) []byte {
			return b[:len(b)-3]
		}, false},
		{"cut, zeros after", []*aof.Record{big}, func(b []byte, start int) []byte {
			b = b[:start+bigLen-50]
			return append(b, make([]byte, 30)...)
		}, false},
		{"length damaged, frames after", append([]*aof.Record{big}, after...), func(b []byte, start int) []byte {
			b[start+3] ^= 0x40
			return b
		}, true},
		{"length of the last record damaged, frame in its value", []*aof.Record{big}, func(b []byte, start int) []byte {
			b[start+2] ^= 0x01
			return b
		}, true},
		{"batch length damaged, frames after", append([]*aof.Record{batch}, after...), func(b []byte, start int) []byte {
			b[start+3] ^= 0x01
			return b
		}, true},
		{"batch length damaged by a little, frames after", append([]*aof.Record{batch}, after...), func(b []byte, start int) []byte {
			n := binary.LittleEndian.Uint32(b[start:])
			binary.LittleEndian.PutUint32(b[start:], n+uint32(len(b)-start-batchLen)+1) // one byte past the end
			return b
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := faultfs.New()
			l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append(set("a", "1", 1)); err != nil {
				t.Fatal(err)
			}
			start := 16 + len(frame(set("a", "1", 1)))
			for _, r := range tt.recs {
				if err := l.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			b, _ := fsys.Contents(firstIncr)
			fsys.SetContents(firstIncr, tt.damage(b, start))
			got := state{}
			l2, rep, err := aof.Open(aof.Config{FS: fsys}, 0, got.apply)
			if tt.corrupt {
				if err == nil {
					l2.Close()
					t.Fatalf("Open = nil (torn %d bytes), want ErrCorrupt: the records after the damage would be dropped", rep.TornBytes)
				}
				if !errors.Is(err, aof.ErrCorrupt) {
					t.Fatalf("Open = %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open = %v, want the cut write cut as a torn tail", err)
			}
			l2.Close()
			if rep.TornBytes == 0 {
				t.Errorf("TornBytes = 0, want the cut write")
			}
			got.equal(t, state{"a": *set("a", "1", 1)})
		})
	}
}
