package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// TestRestoreIntoAUsedEngineNeverReusesAVersion guards the promise that
// a version is never handed out twice for a key: a caller holding a
// version of this engine (here of a key deleted since) must not match an
// entry a Restore brings in with the same number.
func TestRestoreIntoAUsedEngineNeverReusesAVersion(t *testing.T) {
	clk := clock.NewManual(t0)
	src, _ := newTest(t, Config{Clock: clk, Shards: 1})
	dst, _ := newTest(t, Config{Clock: clk, Shards: 1})
	// dst hands out versions 1..10 for "k" and then deletes it.
	var held uint64
	for range 10 {
		v, err := dst.Set("k", []byte("dst"))
		if err != nil {
			t.Fatal(err)
		}
		held = v
	}
	dst.Delete("k")
	// src has "k" at the same version with another value.
	for range 10 {
		src.Set("k", []byte("src"))
	}
	var buf bytes.Buffer
	if _, err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := dst.CompareAndSwap("k", held, []byte("stale")); ok {
		t.Fatalf("a version dst handed out before the Restore (%d) matched the restored entry", held)
	}
	if err := dst.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreVersionsSurviveALostLogTail guards versions across a crash
// after a Restore: when an OS crash loses the restored entries' records
// (SyncNo), the versions they carried must still never be handed out.
func TestRestoreVersionsSurviveALostLogTail(t *testing.T) {
	clk := clock.NewManual(t0)
	src, _ := newTest(t, Config{Clock: clk, Shards: 1})
	for i := range 50 {
		src.Set(fmt.Sprint("k", i%5), []byte("v"))
	}
	snapMax := maxVersion(dump(src))
	var buf bytes.Buffer
	if _, err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	for seed := range uint64(10) {
		fs := faultfs.New()
		cfg := Config{Shards: 1, Durability: Durability{Sync: SyncNo}}
		e := mustOpenDurable(t, fs, "", clk, cfg)
		if _, err := e.Restore(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatal(err)
		}
		e2 := mustOpenDurable(t, fs.Crash(seed), "", clk, cfg)
		for i := range 5 {
			v, err := e2.Set(fmt.Sprint("k", i), []byte("after"))
			if err != nil {
				t.Fatal(err)
			}
			if v <= snapMax {
				t.Fatalf("seed %d: version %d handed out after a crash lost a Restore of versions up to %d", seed, v, snapMax)
			}
		}
		e2.Close()
	}
}

func TestSnapshotOfAnEmptyEngineRestoresNothing(t *testing.T) {
	clk := clock.NewManual(t0)
	e, _ := newTest(t, Config{Clock: clk})
	var buf bytes.Buffer
	if n, err := e.Snapshot(&buf); n != 0 || err != nil {
		t.Fatalf("Snapshot = %d, %v", n, err)
	}
	e2, _ := newTest(t, Config{Clock: clk})
	e2.Set("kept", []byte("x"))
	if n, err := e2.Restore(&buf); n != 0 || err != nil || e2.Len() != 1 {
		t.Fatalf("Restore = %d, %v, Len %d; want 0, nil, 1", n, err, e2.Len())
	}
	// An empty input is not an empty snapshot.
	if _, err := e2.Restore(bytes.NewReader(nil)); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("Restore of no bytes: %v, want ErrLogCorrupt", err)
	}
}

// TestRecoveryEvictsAcrossShards guards recovery under a smaller cap: it
// must evict by the policy in every shard, not empty the first shards
// while the last keep everything (which drops the newest writes of the
// first shards before the oldest of the others).
func TestRecoveryEvictsAcrossShards(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	const shards, n = 4, 400
	e := mustOpenDurable(t, nil, dir, clk, Config{Shards: shards})
	for i := range n {
		e.Set(fmt.Sprintf("k%09d", i), []byte("v"))
	}
	e.Close()
	cfg := Config{Shards: shards, MaxBytes: n / 2 * (EntryOverhead + 11), Policy: evict.AllKeysLRU}
	e2 := mustOpenDurable(t, nil, dir, clk, cfg)
	defer e2.Close()
	per := make([]int, shards)
	for k := range e2.Items() {
		per[e2.ShardIndex(k)]++
	}
	for i, c := range per {
		if c == 0 {
			t.Fatalf("recovery emptied shard %d while others kept entries: %v", i, per)
		}
	}
	// The newest write of every shard survives an LRU recovery.
	newest := make([]string, shards)
	for i := range n {
		k := fmt.Sprintf("k%09d", i)
		newest[e2.ShardIndex(k)] = k
	}
	for i, k := range newest {
		if _, ok := e2.Get(k); !ok {
			t.Fatalf("recovery evicted %q, the newest entry of shard %d", k, i)
		}
	}
	if err := e2.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestDurableDirThatIsAFileIsAClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{Durability: Durability{Dir: path}})
	if !errors.Is(err, ErrLogOpen) {
		t.Fatalf("New with a file as Dir: %v, want ErrLogOpen", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "x" {
		t.Fatalf("the file was changed: %q", b)
	}
}

// TestDurableBaseCorruptionIsAlwaysAnError guards TruncateCorrupt's
// scope: it may cut an incremental log, never silently drop a base (the
// entries of every rewrite before).
func TestDurableBaseCorruptionIsAlwaysAnError(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clk, Config{})
	for i := range 20 {
		e.Set(fmt.Sprint("k", i), []byte("value"))
	}
	if err := e.Rewrite(); err != nil {
		t.Fatal(err)
	}
	e.Set("after", []byte("x"))
	e.Close()
	m, _ := filepath.Glob(filepath.Join(dir, "base-*"))
	if len(m) != 1 {
		t.Fatalf("bases: %v", m)
	}
	b, _ := os.ReadFile(m[0])
	os.WriteFile(m[0], flip(b, len(b)/2), 0o600)
	for _, truncate := range []bool{false, true} {
		_, err := openDurable(t, nil, dir, clk, Config{Durability: Durability{TruncateCorrupt: truncate}})
		if !errors.Is(err, ErrLogCorrupt) {
			t.Fatalf("TruncateCorrupt %v: open with a damaged base: %v, want ErrLogCorrupt", truncate, err)
		}
	}
}

// TestRecoveryDeliversNoRemovals guards the listener contract across a
// restart: the replay's removals (deletes, evictions, entries due at
// recovery) rebuild the state the listener already saw; they are not
// delivered again.
func TestRecoveryDeliversNoRemovals(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clk, Config{Shards: 1})
	e.Set("deleted", []byte("x"))
	e.Delete("deleted")
	e.SetTTL("due", []byte("x"), time.Second)
	for i := range 20 {
		e.Set(fmt.Sprint("k", i), []byte("x"))
	}
	e.Close()
	clk.Advance(time.Minute)
	var got []Removal
	cfg := Config{Shards: 1, MaxBytes: 10 * (EntryOverhead + 3), Policy: evict.AllKeysLRU,
		OnRemove: func(r Removal) { got = append(got, r) }}
	e2 := mustOpenDurable(t, nil, dir, clk, cfg)
	if rep := e2.Recovery(); rep.Evicted == 0 || rep.Due != 1 {
		t.Fatalf("Recovery = %+v, want evictions and one due entry", rep)
	}
	e2.Close()
	if len(got) != 0 {
		t.Fatalf("recovery delivered %d removals: %+v", len(got), got)
	}
}

// keysIn returns n keys with prefix that live in shard i of e.
func keysIn(e *Engine, i int, prefix string, n int) []string {
	var ks []string
	for j := 0; len(ks) < n; j++ {
		if k := fmt.Sprintf("%s%06d", prefix, j); e.ShardIndex(k) == i {
			ks = append(ks, k)
		}
	}
	return ks
}

// TestCrashInsideAWriteThatEvictsElsewhere crashes the file system at
// every step of a write that must evict entries of other shards to fit
// (a Set, and a Commit spanning two shards): the eviction and the write
// are separate records, so a crash can fall between them. After recovery
// the engine must be consistent and under MaxBytes, hold the write if it
// was acknowledged (SyncAlways), hold it wholly or not at all, and never
// hold an entry whose eviction came before a write that survived.
func TestCrashInsideAWriteThatEvictsElsewhere(t *testing.T) {
	const entry = EntryOverhead + 10 + 8 // keys of 10 bytes, values of 8
	type op struct {
		name string
		// do makes the write; keys are the keys it sets.
		do   func(e *Engine, a, b []string) (map[string]uint64, error)
		keys int
	}
	big := bytes.Repeat([]byte{'b'}, 3*entry)
	ops := []op{
		{"Set", func(e *Engine, a, b []string) (map[string]uint64, error) {
			v, err := e.Set(a[len(a)-1], big)
			return map[string]uint64{a[len(a)-1]: v}, err
		}, 1},
		{"Commit", func(e *Engine, a, b []string) (map[string]uint64, error) {
			vs, ok, err := e.Commit(nil, []Op{
				{Key: a[len(a)-1], Value: big, TTL: NoTTL, Pin: true},
				{Key: b[len(b)-1], Value: big, TTL: NoTTL, Pin: true},
			})
			if err == nil && !ok {
				err = errRefused
			}
			if err != nil {
				return nil, err
			}
			return map[string]uint64{a[len(a)-1]: vs[0], b[len(b)-1]: vs[1]}, nil
		}, 2},
	}
	for _, o := range ops {
		t.Run(o.name, func(t *testing.T) {
			cfg := Config{Shards: 4, MaxBytes: 40 * entry, Policy: evict.AllKeysLRU, Durability: Durability{Sync: SyncAlways}}
			clk := clock.NewManual(t0)
			for n, seed := 0, uint64(0); ; n, seed = n+1, seed+1 {
				fs := faultfs.New()
				e := mustOpenDurable(t, fs, "", clk, cfg)
				// Shards 0 and 1 hold pinned entries only (nothing to
				// evict there); shards 2 and 3 hold the evictable ones.
				pinned := [2][]string{keysIn(e, 0, "a", 6), keysIn(e, 1, "b", 6)}
				for _, ks := range pinned {
					for _, k := range ks[:len(ks)-1] {
						if _, _, err := e.SetWith(k, []byte("pinned!!"), SetOptions{TTL: NoTTL, Pin: true}); err != nil {
							t.Fatal(err)
						}
					}
				}
				var victims []string
				for i := 2; i < 4; i++ {
					victims = append(victims, keysIn(e, i, "c", 15)...)
				}
				for _, k := range victims {
					if _, err := e.Set(k, []byte("evict me")); err != nil {
						t.Fatal(err)
					}
				}
				if st := e.Stats(); st.Evicted != 0 {
					t.Fatalf("setup evicted %d entries", st.Evicted)
				}
				base := fs.Ops()
				fs.CrashAfter(n)
				got, err := o.do(e, pinned[0], pinned[1])
				crashed := fs.Crashed()
				var evicted []string
				for _, k := range victims {
					if _, ok := e.Get(k); !ok {
						evicted = append(evicted, k)
					}
				}
				if err == nil && len(evicted) == 0 {
					t.Fatal("the write evicted nothing: the test does not cover its case")
				}
				after := fs.Crash(seed)
				e.Close()
				e2 := mustOpenDurable(t, after, "", clk, cfg)
				if err := e2.Check(); err != nil {
					t.Fatalf("crash after %d ops: %v", n, err)
				}
				if st := e2.Stats(); st.Bytes > st.MaxBytes {
					t.Fatalf("crash after %d ops: %d bytes over MaxBytes %d", n, st.Bytes, st.MaxBytes)
				}
				present := 0
				for k, v := range got {
					if it, ok := e2.GetItem(k); ok && it.Version == v {
						present++
					}
				}
				if err == nil && present != o.keys {
					t.Fatalf("crash after %d ops: %d of %d keys of an acknowledged write survived", n, present, o.keys)
				}
				written := 0
				for _, k := range []string{pinned[0][5], pinned[1][5]} {
					if _, ok := e2.Get(k); ok {
						written++
					}
				}
				if written != 0 && written != o.keys {
					t.Fatalf("crash after %d ops: a partial write survived (%d of %d keys)", n, written, o.keys)
				}
				if written > 0 {
					// The write's room came from evictions logged before
					// it or with it: none of them may come back.
					for _, k := range evicted {
						if _, ok := e2.Get(k); ok {
							t.Fatalf("crash after %d ops: %q, evicted to make room for a write that survived, came back", n, k)
						}
					}
				}
				e2.Close()
				if !crashed {
					if fs.Ops()-base == 0 {
						t.Fatal("the write made no file operation")
					}
					t.Logf("crashed at each of the write's %d file operations", n)
					return // the write completed before the crash point
				}
			}
		})
	}
}

// TestRestoreRacingRewriteAndWritersLosesNothing runs a Restore while a
// rewrite loops and writers write other keys: after a clean restart the
// engine holds exactly what it held at Close.
func TestRestoreRacingRewriteAndWritersLosesNothing(t *testing.T) {
	clk := clock.NewManual(t0)
	src, _ := newTest(t, Config{Clock: clk})
	for i := range 3000 {
		src.SetTTL(fmt.Sprint("r", i), []byte("restored"), time.Hour)
	}
	var buf bytes.Buffer
	if _, err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := Config{Shards: 4}
	e := mustOpenDurable(t, nil, dir, clk, cfg)
	stop := make(chan struct{})
	done := make(chan error, 2)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := e.Rewrite(); err != nil && !errors.Is(err, ErrRewriteBusy) {
				done <- err
				return
			}
		}
	}()
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := e.Set(fmt.Sprint("w", i%500), []byte(fmt.Sprint(i))); err != nil {
				done <- err
				return
			}
		}
	}()
	n, err := e.Restore(&buf)
	close(stop)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err != nil || n != 3000 {
		t.Fatalf("Restore = %d, %v", n, err)
	}
	want := dump(e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := mustOpenDurable(t, nil, dir, clk, cfg)
	defer e2.Close()
	if d := diffDumps(want, dump(e2)); d != "" {
		t.Fatalf("after restart:\n%s", d)
	}
}

// TestRestoreOverAPinnedKeyTakesTheSnapshotsPinning guards Restore's
// "exactly as recorded": an unpinned snapshot entry written over a pinned
// key leaves it unpinned (and evictable), in memory and after a restart.
func TestRestoreOverAPinnedKeyTakesTheSnapshotsPinning(t *testing.T) {
	clk := clock.NewManual(t0)
	src, _ := newTest(t, Config{Clock: clk})
	src.Set("k", []byte("snap"))
	var buf bytes.Buffer
	if _, err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := Config{MaxBytes: 1 << 20, Policy: evict.AllKeysLRU}
	e := mustOpenDurable(t, nil, dir, clk, cfg)
	if _, _, err := e.SetWith("k", []byte("pinned"), SetOptions{TTL: NoTTL, Pin: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	for round, eng := range []*Engine{e, nil} {
		if eng == nil {
			e.Close()
			eng = mustOpenDurable(t, nil, dir, clk, cfg)
			defer eng.Close()
		}
		it, ok := eng.GetItem("k")
		if !ok || it.Pinned || string(it.Value) != "snap" {
			t.Fatalf("round %d: %+v %v, want the snapshot's unpinned value", round, it, ok)
		}
		if err := eng.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoveryThatCannotFitChangesNothing guards a restart with a cap
// smaller than the entries that may not be evicted: New fails with
// ErrOutOfMemory and leaves the log as it was (it does not evict what it
// can first), so a restart with the old cap gets every entry back.
func TestRecoveryThatCannotFitChangesNothing(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clk, Config{Shards: 2})
	for i := range 10 {
		if _, _, err := e.SetWith(fmt.Sprintf("pinned%04d", i), []byte("x"), SetOptions{TTL: NoTTL, Pin: true}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if _, err := e.Set(fmt.Sprintf("plain%05d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	want := dump(e)
	e.Close()
	small := Config{Shards: 2, MaxBytes: 5 * (EntryOverhead + 11), Policy: evict.AllKeysLRU}
	if _, err := openDurable(t, nil, dir, clk, small); !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("New with a cap below the pinned entries: %v, want ErrOutOfMemory", err)
	}
	e2 := mustOpenDurable(t, nil, dir, clk, Config{Shards: 2})
	defer e2.Close()
	if d := diffDumps(want, dump(e2)); d != "" {
		t.Fatalf("a failed recovery changed the log:\n%s", d)
	}
}

// TestRestoreDeliversItsRemovals guards OnRemove's "every removal" for
// Restore into a used engine: a key it overwrites is reported replaced
// (with the value it had), a due key it finds is reported expired, as a
// Set would report them.
func TestRestoreDeliversItsRemovals(t *testing.T) {
	clk := clock.NewManual(t0)
	src, _ := newTest(t, Config{Clock: clk})
	src.Set("k", []byte("new"))
	src.Set("due", []byte("new"))
	var buf bytes.Buffer
	if _, err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	var got []Removal
	e, _ := newTest(t, Config{Clock: clk, OnRemove: func(r Removal) { got = append(got, r) }})
	e.Set("k", []byte("old"))
	e.SetTTL("due", []byte("old"), time.Second)
	clk.Advance(2 * time.Second)
	if _, err := e.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	want := map[string]Cause{"k": CauseReplaced, "due": CauseExpired}
	if len(got) != len(want) {
		t.Fatalf("removals %+v, want %v", got, want)
	}
	for _, r := range got {
		if want[r.Key] != r.Cause || string(r.Value) != "old" {
			t.Fatalf("removal %+v, want %v of the old value", r, want[r.Key])
		}
	}
}

// TestDurableUnwritableDirIsErrLogOpen guards the error of a directory
// the process may not write (simulated: the tests may run as root, which
// file modes do not stop): New fails with ErrLogOpen carrying the cause.
func TestDurableUnwritableDirIsErrLogOpen(t *testing.T) {
	fs := faultfs.New()
	fs.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
		if op == faultfs.OpCreate {
			return &faultfs.Fault{Err: syscall.EACCES}
		}
		return nil
	})
	_, err := openDurable(t, fs, "", clock.NewManual(t0), Config{})
	if !errors.Is(err, ErrLogOpen) || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("New on an unwritable directory: %v, want ErrLogOpen wrapping EACCES", err)
	}
}

// fixedSource is an aof.Source of given records, for crafted snapshots.
type fixedSource struct {
	versions []uint64
	recs     []aof.Record
}

func (f fixedSource) Versions() []uint64 { return f.versions }

func (f fixedSource) Records(emit func(*aof.Record) error) error {
	for i := range f.recs {
		if err := emit(&f.recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// TestVersionsAtTheLimitAreRefused guards versions against a snapshot or
// a log crafted (or damaged past its checksums) to carry a version near
// the top of uint64: taking it would wrap the counter to 0 (AnyVersion,
// MustBeAbsent) and reuse every version. Restore refuses the snapshot
// with ErrLogCorrupt and stores nothing; New refuses the log.
func TestVersionsAtTheLimitAreRefused(t *testing.T) {
	clk := clock.NewManual(t0)
	for _, v := range []uint64{math.MaxUint64, math.MaxUint64 - 1, math.MaxUint64 - versionBlock} {
		for _, viaCounter := range []bool{false, true} {
			src := fixedSource{versions: []uint64{1}, recs: []aof.Record{{Op: aof.OpSet, Key: "k", Value: []byte("x"), Version: 1}}}
			if viaCounter {
				src.versions[0] = v
			} else {
				src.recs[0].Version = v
			}
			var buf bytes.Buffer
			if _, err := aof.WriteSnapshot(&buf, src); err != nil {
				t.Fatal(err)
			}
			e, _ := newTest(t, Config{Clock: clk})
			if n, err := e.Restore(&buf); !errors.Is(err, ErrLogCorrupt) || n != 0 || e.Len() != 0 {
				t.Fatalf("version %d (counter %v): Restore = %d, %v, Len %d; want ErrLogCorrupt and nothing", v, viaCounter, n, err, e.Len())
			}
			if ver, err := e.Set("after", []byte("x")); err != nil || ver == AnyVersion {
				t.Fatalf("Set after a refused Restore: version %d, %v", ver, err)
			}
		}
		fs := faultfs.New()
		l, _, err := aof.Open(aof.Config{FS: fs, Sync: aof.SyncAlways}, 0, func(*aof.Record) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(&aof.Record{Op: aof.OpSet, Key: "k", Value: []byte("x"), Version: v}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		if _, err := openDurable(t, fs, "", clk, Config{}); !errors.Is(err, ErrLogCorrupt) {
			t.Fatalf("version %d in the log: New = %v, want ErrLogCorrupt", v, err)
		}
	}
}

// TestRecoveryRefusesAKeyOverMaxKeySize guards a restart with a smaller
// MaxKeySize than the log's keys: New fails with ErrKeyTooLarge instead
// of storing a key no call can read or delete (they refuse keys over the
// limit), and the log is left for a restart with the old limit.
func TestRecoveryRefusesAKeyOverMaxKeySize(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	long := string(bytes.Repeat([]byte{'k'}, 200))
	e := mustOpenDurable(t, nil, dir, clk, Config{})
	if _, _, err := e.SetWith(long, []byte("x"), SetOptions{TTL: NoTTL, Pin: true}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := openDurable(t, nil, dir, clk, Config{MaxKeySize: 100}); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("New with MaxKeySize below a logged key: %v, want ErrKeyTooLarge", err)
	}
	e2 := mustOpenDurable(t, nil, dir, clk, Config{})
	defer e2.Close()
	if _, ok := e2.Get(long); !ok {
		t.Fatal("the key was lost")
	}
}

// TestAVersionlessSetIsRefusedOrRenumbered guards the version invariant
// (every entry's version ≥ 1; 0 is AnyVersion and MustBeAbsent) against a
// crafted set record without a version: New refuses such a log with
// ErrLogCorrupt; Restore gives such an entry a new version.
func TestAVersionlessSetIsRefusedOrRenumbered(t *testing.T) {
	clk := clock.NewManual(t0)
	fs := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fs, Sync: aof.SyncAlways}, 0, func(*aof.Record) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(&aof.Record{Op: aof.OpSet, Key: "k", Value: []byte("x"), Version: aof.NoVersion}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := openDurable(t, fs, "", clk, Config{}); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("a set without a version in the log: New = %v, want ErrLogCorrupt", err)
	}
	var buf bytes.Buffer
	src := fixedSource{versions: []uint64{0}, recs: []aof.Record{{Op: aof.OpSet, Key: "k", Value: []byte("x")}}}
	if _, err := aof.WriteSnapshot(&buf, src); err != nil {
		t.Fatal(err)
	}
	e, _ := newTest(t, Config{Clock: clk})
	if _, err := e.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if it, ok := e.GetItem("k"); !ok || it.Version == AnyVersion {
		t.Fatalf("restored %+v, %v: want the entry with a version ≥ 1", it, ok)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}
