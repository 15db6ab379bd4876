package engine

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// openDurable opens an engine logging to fs (or dir) on clk, with no
// background goroutines.
func openDurable(t testing.TB, fs aof.FS, dir string, clk clock.Clock, cfg Config) (*Engine, error) {
	t.Helper()
	cfg.Clock = clk
	cfg.ExpiryInterval = -1
	if cfg.Durability.RewritePercent == 0 {
		cfg.Durability.RewritePercent = NoAutoRewrite
	}
	cfg.Durability.Dir = dir
	cfg.Durability.fs = fs
	return New(cfg)
}

func mustOpenDurable(t testing.TB, fs aof.FS, dir string, clk clock.Clock, cfg Config) *Engine {
	t.Helper()
	e, err := openDurable(t, fs, dir, clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// dump returns the engine's live entries with their items.
func dump(e *Engine) map[string]Item {
	m := map[string]Item{}
	for k, it := range e.Items() {
		m[k] = it
	}
	return m
}

func diffDumps(want, got map[string]Item) string {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w, g := want[k], got[k]
		if _, ok := got[k]; !ok {
			fmt.Fprintf(&b, "%q: missing, want %q v%d\n", k, w.Value, w.Version)
			continue
		}
		if !bytes.Equal(w.Value, g.Value) || w.Version != g.Version || w.TTL != g.TTL || w.Pinned != g.Pinned {
			fmt.Fprintf(&b, "%q: got %q v%d ttl %v pin %v, want %q v%d ttl %v pin %v\n", k, g.Value, g.Version, g.TTL, g.Pinned, w.Value, w.Version, w.TTL, w.Pinned)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "%q: resurrected or unexpected, %q v%d ttl %v\n", k, g.Value, g.Version, g.TTL)
		}
	}
	return b.String()
}

// writeEverything makes one of each kind of mutation.
func writeEverything(t *testing.T, e *Engine, clk *clock.Manual) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.Set("plain", []byte("v"))
	must(err)
	_, err = e.SetTTL("ttl", []byte("t"), time.Hour)
	must(err)
	_, _, err = e.SetWith("pinned", []byte("p"), SetOptions{TTL: NoTTL, Pin: true})
	must(err)
	_, err = e.IncrBy("counter", 41)
	must(err)
	_, err = e.Incr("counter")
	must(err)
	v, err := e.Set("cas", []byte("1"))
	must(err)
	if _, ok, err := e.CompareAndSwap("cas", v, []byte("2")); !ok || err != nil {
		t.Fatalf("CompareAndSwap: %v %v", ok, err)
	}
	_, err = e.Set("deleted", []byte("x"))
	must(err)
	e.Delete("deleted")
	_, err = e.Set("getdel", []byte("x"))
	must(err)
	e.GetAndDelete("getdel")
	_, err = e.SetTTL("persisted", []byte("x"), time.Minute)
	must(err)
	mustOK(t)(e.Persist("persisted"))
	_, err = e.Set("expire", []byte("x"))
	must(err)
	_, err = e.Expire("expire", 2*time.Hour, ExpireConditionAlways)
	must(err)
	_, err = e.Set("expireat-due", []byte("x"))
	must(err)
	_, err = e.ExpireAt("expireat-due", clk.Time().Add(-time.Second), ExpireConditionAlways)
	must(err)
	_, err = e.SetTTL("sliding", []byte("x"), time.Minute)
	must(err)
	_, _, err = e.GetAndExpire("sliding", 3*time.Hour)
	must(err)
	_, err = e.Set("unpinned", []byte("x"))
	must(err)
	mustOK(t)(e.Pin("unpinned", true))
	mustOK(t)(e.Pin("unpinned", false))
	mustOK(t)(e.Pin("pinned", true))
	_, err = e.Set("c1", []byte("old"))
	must(err)
	_, err = e.Set("c-del", []byte("old"))
	must(err)
	_, ok, err := e.Commit(nil, []Op{
		{Key: "c1", Value: []byte("new"), KeepTTL: true},
		{Key: "c2", Value: []byte("two"), TTL: 5 * time.Hour, Pin: true},
		{Key: "c-del", Delete: true},
	})
	if !ok || err != nil {
		t.Fatalf("Commit: %v %v", ok, err)
	}
	_, _, err = e.SetWith("short", []byte("x"), SetOptions{TTL: time.Second})
	must(err)
}

func TestDurableRestartRestoresEveryMutationExactly(t *testing.T) {
	for _, p := range []SyncPolicy{SyncAlways, SyncEverySecond, SyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			clk := clock.NewManual(t0)
			dir := t.TempDir()
			cfg := Config{Durability: Durability{Sync: p}}
			e := mustOpenDurable(t, nil, dir, clk, cfg)
			writeEverything(t, e, clk)
			want := dump(e)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e2 := mustOpenDurable(t, nil, dir, clk, cfg)
			defer e2.Close()
			if d := diffDumps(want, dump(e2)); d != "" {
				t.Fatalf("after restart:\n%s", d)
			}
			if err := e2.Check(); err != nil {
				t.Fatal(err)
			}
			if rep := e2.Recovery(); rep.Entries != len(want) || rep.MaxVersion == 0 {
				t.Fatalf("Recovery = %+v, want %d entries", rep, len(want))
			}
		})
	}
}

func TestDurableEntryDueAtRecoveryIsNotRestored(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clk, Config{})
	e.SetTTL("soon", []byte("x"), time.Second)
	e.SetTTL("later", []byte("x"), time.Hour)
	e.SetTTL("extended", []byte("x"), time.Second)
	e.Expire("extended", time.Hour, ExpireConditionAlways)
	e.Close()
	clk.Advance(2 * time.Second)
	e2 := mustOpenDurable(t, nil, dir, clk, Config{})
	defer e2.Close()
	if _, ok := e2.Get("soon"); ok {
		t.Fatal("an entry due while the process was down was restored")
	}
	for _, k := range []string{"later", "extended"} {
		if _, ok := e2.Get(k); !ok {
			t.Fatalf("%q lost", k)
		}
	}
	if rep := e2.Recovery(); rep.Due != 1 || rep.Entries != 2 {
		t.Fatalf("Recovery = %+v, want Due 1, Entries 2", rep)
	}
}

func TestDurableVersionsAreNeverReusedAfterALostTail(t *testing.T) {
	// Under SyncNo an OS crash loses every unsynced record: the versions
	// acknowledged in that tail must still never be handed out again.
	for seed := uint64(0); seed < 20; seed++ {
		fs := faultfs.New()
		clk := clock.NewManual(t0)
		cfg := Config{Shards: 4, Durability: Durability{Sync: SyncNo}}
		e := mustOpenDurable(t, fs, "", clk, cfg)
		var acked []uint64
		for i := range 200 {
			v, err := e.Set(fmt.Sprint("k", i%17), []byte("v"))
			if err != nil {
				t.Fatal(err)
			}
			acked = append(acked, v)
		}
		fs2 := fs.Crash(seed)
		e2 := mustOpenDurable(t, fs2, "", clk, cfg)
		for i := range 200 {
			v, err := e2.Set(fmt.Sprint("n", i), []byte("v"))
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(acked, v) {
				t.Fatalf("seed %d: version %d reused after a crash", seed, v)
			}
		}
		e2.Close()
	}
}

func TestDurabilityConfigIsValidated(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []Durability{
		{Dir: dir, Sync: SyncNo + 1},
		{Dir: dir, SyncInterval: -1},
		{Dir: dir, RewritePercent: -2},
		{Dir: dir, RewriteMinSize: -1},
		{Dir: dir, RewriteCheckInterval: -1},
	} {
		if _, err := New(Config{Durability: d}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", d, err)
		}
	}
	// Without a Dir the rest is ignored: no log.
	e, err := New(Config{Durability: Durability{Sync: SyncNo + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.LogStats().Enabled || e.Rewrite() != ErrNoLog {
		t.Fatal("an engine without Dir logs")
	}
}

func TestDurableDirectoryIsExclusive(t *testing.T) {
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clock.NewManual(t0), Config{})
	if _, err := openDurable(t, nil, dir, clock.NewManual(t0), Config{}); !errors.Is(err, ErrLogLocked) {
		t.Fatalf("second open: %v, want ErrLogLocked", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	e2 := mustOpenDurable(t, nil, dir, clock.NewManual(t0), Config{})
	e2.Close()
}

func TestDurableRewriteKeepsStateAndShrinksTheLog(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clk, Config{})
	for i := range 5000 {
		e.Set(fmt.Sprint("k", i%50), bytes.Repeat([]byte{'x'}, 100))
	}
	e.SetTTL("ttl", []byte("x"), time.Hour)
	e.SetWith("pin", []byte("x"), SetOptions{TTL: NoTTL, Pin: true})
	before := e.LogStats()
	if err := e.Rewrite(); err != nil {
		t.Fatal(err)
	}
	after := e.LogStats()
	if after.BaseBytes+after.IncrBytes >= (before.BaseBytes+before.IncrBytes)/10 || after.Rewrites != 1 {
		t.Fatalf("log %d+%d bytes after rewrite, %d+%d before", after.BaseBytes, after.IncrBytes, before.BaseBytes, before.IncrBytes)
	}
	e.Set("after", []byte("x"))
	e.Delete("k0")
	want := dump(e)
	e.Close()
	e2 := mustOpenDurable(t, nil, dir, clk, Config{})
	defer e2.Close()
	if d := diffDumps(want, dump(e2)); d != "" {
		t.Fatalf("after rewrite and restart:\n%s", d)
	}
	v, _ := e2.Set("new", []byte("x"))
	if v <= maxVersion(want) {
		t.Fatalf("version %d after restart, not above %d", v, maxVersion(want))
	}
}

func maxVersion(m map[string]Item) uint64 {
	var v uint64
	for _, it := range m {
		v = max(v, it.Version)
	}
	return v
}

func TestDurableAutomaticRewriteRunsByThreshold(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	cfg := Config{Durability: Durability{RewritePercent: 100, RewriteMinSize: 64 << 10, RewriteCheckInterval: time.Hour}}
	e := mustOpenDurable(t, nil, dir, clk, cfg)
	defer e.Close()
	for i := range 2000 {
		e.Set(fmt.Sprint("k", i%10), bytes.Repeat([]byte{'x'}, 100))
	}
	// Kick the goroutine instead of waiting for its ticker.
	for e.LogStats().Rewrites == 0 {
		select {
		case e.dur.kick <- struct{}{}:
		default:
		}
		time.Sleep(time.Millisecond)
	}
	if st := e.LogStats(); st.RewriteErr != nil || st.IncrBytes > 64<<10 {
		t.Fatalf("after automatic rewrite: %+v", st)
	}
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	clk := clock.NewManual(t0)
	e, _ := newTest(t, Config{Clock: clk})
	writeEverything(t, e, clk)
	want := dump(e)
	var buf bytes.Buffer
	n, err := e.Snapshot(&buf)
	if err != nil || n != len(want) {
		t.Fatalf("Snapshot = %d, %v; want %d entries", n, err, len(want))
	}
	e2, _ := newTest(t, Config{Clock: clk})
	if n, err := e2.Restore(bytes.NewReader(buf.Bytes())); err != nil || n != len(want) {
		t.Fatalf("Restore = %d, %v", n, err)
	}
	if d := diffDumps(want, dump(e2)); d != "" {
		t.Fatalf("after restore:\n%s", d)
	}
	if v, _ := e2.Set("new", []byte("x")); v <= maxVersion(want) {
		t.Fatalf("version %d after restore, not above %d", v, maxVersion(want))
	}
	if err := e2.Check(); err != nil {
		t.Fatal(err)
	}
	// A damaged or truncated snapshot restores nothing.
	for name, b := range map[string][]byte{
		"truncated": buf.Bytes()[:buf.Len()-3],
		"flipped":   flip(buf.Bytes(), buf.Len()/2),
	} {
		e3, _ := newTest(t, Config{Clock: clk})
		if n, err := e3.Restore(bytes.NewReader(b)); !errors.Is(err, ErrLogCorrupt) || n != 0 || e3.Len() != 0 {
			t.Fatalf("%s snapshot: Restore = %d, %v, Len %d; want ErrLogCorrupt and nothing", name, n, err, e3.Len())
		}
	}
	// An entry due by restore time is skipped.
	clk.Advance(2 * time.Second)
	e4, _ := newTest(t, Config{Clock: clk})
	e4.Restore(bytes.NewReader(buf.Bytes()))
	if _, ok := e4.Get("short"); ok {
		t.Fatal("a due entry was restored")
	}
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0x40
	return c
}

// incrFile returns the path of the (only) incremental log in dir.
func incrFile(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "incr-*.log"))
	if len(m) != 1 {
		t.Fatalf("incremental logs: %v", m)
	}
	return m[0]
}

func TestDurableTornTailIsCutAndCounted(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clk, Config{Durability: Durability{Sync: SyncAlways}})
	e.Set("a", []byte("1"))
	e.Set("b", []byte("2"))
	e.Close()
	f, _ := os.OpenFile(incrFile(t, dir), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{40, 0, 0, 0, 1, 2, 3}) // a frame cut short by a crash
	f.Close()
	e2 := mustOpenDurable(t, nil, dir, clk, Config{})
	defer e2.Close()
	if rep := e2.Recovery(); rep.TornBytes != 7 || rep.Entries != 2 {
		t.Fatalf("Recovery = %+v, want TornBytes 7, 2 entries", rep)
	}
}

func TestDurableMidLogCorruptionIsAnErrorOrTruncated(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clk, Config{})
	for i := range 10 {
		e.Set(fmt.Sprint("k", i), []byte("value"))
	}
	e.Close()
	path := incrFile(t, dir)
	b, _ := os.ReadFile(path)
	os.WriteFile(path, flip(b, len(b)/2), 0o600)
	_, err := openDurable(t, nil, dir, clk, Config{})
	var ce *aof.CorruptError
	if !errors.Is(err, ErrLogCorrupt) || !errors.As(err, &ce) || ce.Offset <= 0 {
		t.Fatalf("open of a corrupt log: %v, want ErrLogCorrupt naming an offset", err)
	}
	e2 := mustOpenDurable(t, nil, dir, clk, Config{Durability: Durability{TruncateCorrupt: true}})
	defer e2.Close()
	rep := e2.Recovery()
	if !errors.Is(rep.Corruption, ErrLogCorrupt) || rep.DiscardedBytes == 0 || rep.Entries == 0 || rep.Entries >= 10 {
		t.Fatalf("Recovery = %+v, want a cut with some entries kept", rep)
	}
}

func TestDurableEvictionIsNotResurrected(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	cfg := Config{Shards: 1, MaxBytes: 10 * (EntryOverhead + 10), Policy: evict.AllKeysLRU}
	e := mustOpenDurable(t, nil, dir, clk, cfg)
	for i := range 100 {
		if _, err := e.Set(fmt.Sprintf("k%09d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	want := dump(e)
	e.Close()
	e2 := mustOpenDurable(t, nil, dir, clk, cfg)
	defer e2.Close()
	if d := diffDumps(want, dump(e2)); d != "" {
		t.Fatalf("after restart:\n%s", d)
	}
	if err := e2.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestDurableRecoveryEvictsToASmallerCap(t *testing.T) {
	clk := clock.NewManual(t0)
	dir := t.TempDir()
	e := mustOpenDurable(t, nil, dir, clk, Config{Shards: 1})
	for i := range 100 {
		e.Set(fmt.Sprintf("k%09d", i), []byte("v"))
	}
	e.Close()
	cfg := Config{Shards: 1, MaxBytes: 10 * (EntryOverhead + 11), Policy: evict.AllKeysLRU}
	e2 := mustOpenDurable(t, nil, dir, clk, cfg)
	if rep := e2.Recovery(); rep.Entries != 10 || rep.Evicted != 90 {
		t.Fatalf("Recovery = %+v, want 10 entries, 90 evicted", rep)
	}
	if err := e2.Check(); err != nil {
		t.Fatal(err)
	}
	want := dump(e2)
	e2.Close()
	e3 := mustOpenDurable(t, nil, dir, clk, cfg)
	defer e3.Close()
	if d := diffDumps(want, dump(e3)); d != "" || e3.Recovery().Evicted != 0 {
		t.Fatalf("the evictions of a recovery were not logged:\n%s", d)
	}
}

// errRefused is what the closures of a bool API (Persist, Pin) return
// when the call reported false.
var errRefused = errors.New("refused")

func TestDurableFailedAppendChangesNothing(t *testing.T) {
	enospc := &faultfs.Fault{Err: syscall.ENOSPC, Partial: 3}
	short := &faultfs.Fault{Partial: 5}
	type write struct {
		name string
		do   func(e *Engine) error
	}
	writes := []write{
		{"Set", func(e *Engine) error { _, err := e.Set("k", []byte("new")); return err }},
		{"SetTTL", func(e *Engine) error { _, err := e.SetTTL("k", []byte("new"), time.Hour); return err }},
		{"Incr", func(e *Engine) error { _, err := e.Incr("n"); return err }},
		{"CompareAndSwap", func(e *Engine) error {
			it, _ := e.GetItem("k")
			_, _, err := e.CompareAndSwap("k", it.Version, []byte("new"))
			return err
		}},
		{"Commit", func(e *Engine) error {
			_, _, err := e.Commit(nil, []Op{{Key: "k", Value: []byte("new"), TTL: NoTTL}, {Key: "n", Delete: true}})
			return err
		}},
		{"DeleteWith", func(e *Engine) error { _, _, err := e.DeleteWith("k", DeleteOptions{}); return err }},
		{"Expire", func(e *Engine) error { _, err := e.Expire("k", time.Minute, ExpireConditionAlways); return err }},
		{"GetAndExpire", func(e *Engine) error { _, _, err := e.GetAndExpire("k", time.Minute); return err }},
		{"Persist", func(e *Engine) error {
			if ok, _ := e.Persist("t"); ok {
				return nil
			}
			return errRefused
		}},
		{"Pin", func(e *Engine) error {
			if ok, _ := e.Pin("k", true); ok {
				return nil
			}
			return errRefused
		}},
	}
	for _, f := range []struct {
		name  string
		fault *faultfs.Fault
		want  error
		cause error
	}{
		{"ENOSPC", enospc, ErrLogWrite, syscall.ENOSPC},
		{"short write", short, ErrLogWrite, nil},
		{"fsync EIO", &faultfs.Fault{Err: syscall.EIO}, ErrLogFailed, syscall.EIO},
	} {
		for _, w := range writes {
			t.Run(f.name+"/"+w.name, func(t *testing.T) {
				fs := faultfs.New()
				clk := clock.NewManual(t0)
				cfg := Config{Durability: Durability{Sync: SyncAlways}}
				e := mustOpenDurable(t, fs, "", clk, cfg)
				e.Set("k", []byte("old"))
				e.Set("n", []byte("7"))
				e.SetTTL("t", []byte("x"), time.Hour)
				e.Set("other", []byte("x"))
				before := dump(e)
				op := faultfs.OpWrite
				if f.want == ErrLogFailed {
					op = faultfs.OpSync
				}
				fs.SetHook(func(o faultfs.Op, name string) *faultfs.Fault {
					if o == op {
						return f.fault
					}
					return nil
				})
				err := w.do(e)
				if err != errRefused && (!errors.Is(err, f.want) || f.cause != nil && !errors.Is(err, f.cause)) {
					t.Fatalf("err = %v, want %v (%v)", err, f.want, f.cause)
				}
				if d := diffDumps(before, dump(e)); d != "" {
					t.Fatalf("a failed write changed memory:\n%s", d)
				}
				if err := e.Check(); err != nil {
					t.Fatal(err)
				}
				fs.SetHook(nil)
				_, err = e.Set("after", []byte("x"))
				if f.want == ErrLogFailed {
					if !errors.Is(err, ErrLogFailed) || e.LogStats().Err == nil {
						t.Fatalf("write after a failed fsync: %v, want ErrLogFailed", err)
					}
				} else if err != nil {
					t.Fatalf("write after a failed append: %v", err)
				} else {
					before = dump(e)
				}
				e.Close()
				e2 := mustOpenDurable(t, fs.Crash(1), "", clk, cfg)
				defer e2.Close()
				got := dump(e2)
				if f.want == ErrLogFailed {
					// The failed fsync's record may or may not have survived:
					// what it did not touch must have.
					if g, ok := got["other"]; !ok || g.Version != before["other"].Version {
						t.Fatalf("an acknowledged write was lost after a failed fsync: %+v", g)
					}
					return
				}
				if d := diffDumps(before, got); d != "" {
					t.Fatalf("after crash:\n%s", d)
				}
			})
		}
	}
}

// mustOK fails t if a (done, error) call returned an error or did nothing.
func mustOK(t *testing.T) func(bool, error) {
	t.Helper()
	return func(ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("got (%v, %v), want (true, nil)", ok, err)
		}
	}
}

// Recovery sizes arenas for the data it replays (a base presizes them;
// a log doubles them as it streams in) and then trims them: a recovered
// engine holds the same entries, and no arena keeps more than the usual
// headroom, whether the replay came from a log, a base, or a base larger
// than a lowered MaxBytes.
func TestRecoveredArenasKeepTheUsualHeadroom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rewrite  bool
		maxBytes int64
	}{
		{"log", false, 0},
		{"base", true, 0},
		{"base over a lowered cap", true, 4000 * (EntryOverhead + 40)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(time.Unix(1e9, 0))
			e := mustOpenDurable(t, nil, dir, clk, Config{Shards: 4})
			for i := range 20000 {
				if _, err := e.Set(fmt.Sprintf("key-%08d", i), bytes.Repeat([]byte{byte(i)}, 28)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.rewrite {
				if err := e.Rewrite(); err != nil {
					t.Fatal(err)
				}
			}
			want := dump(e)
			e.Close()
			e = mustOpenDurable(t, nil, dir, clk, Config{Shards: 4, MaxBytes: tc.maxBytes, Policy: evict.AllKeysLRU})
			defer e.Close()
			got := dump(e)
			if tc.maxBytes == 0 {
				if d := diffDumps(want, got); d != "" {
					t.Fatalf("recovered entries differ:\n%s", d)
				}
			} else if len(got) == 0 || len(got) > 4000 {
				t.Fatalf("recovered %d entries under a cap of 4000 entries' worth", len(got))
			}
			for i := range e.shards {
				s := &e.shards[i]
				s.mu.RLock()
				n, c, bulk := len(s.arena), cap(s.arena), s.bulk
				s.mu.RUnlock()
				if bulk {
					t.Errorf("shard %d still in bulk mode after recovery", i)
				}
				if c-n > n/4+4096 {
					t.Errorf("shard %d: arena cap %d for %d bytes used, want at most %d", i, c, n, n+n/4+4096)
				}
			}
			mustCheck(t, e)
		})
	}
}
