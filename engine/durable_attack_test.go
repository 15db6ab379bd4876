package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
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
