package aof_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// TestRewriteCrashAtEveryStep crashes the file system at every mutating
// operation of a rewrite in turn (the switch, the base, the manifest
// commit, the removals), with several choices of what unsynced state
// survives, and checks that reopening gives exactly the acknowledged state
// and that appends after the reopen work.
func TestRewriteCrashAtEveryStep(t *testing.T) {
	setup := func() (*faultfs.FS, *aof.Log, state) {
		fsys := faultfs.New()
		l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		want := state{}
		for i := range 20 {
			r := set(fmt.Sprintf("k%d", i%7), fmt.Sprintf("v%d", i), uint64(i+1))
			if i%5 == 4 {
				k := fmt.Sprintf("k%d", i%7)
				r = &aof.Record{Op: aof.OpRemove, Key: k, Version: want[k].Version, Cause: aof.CauseDeleted}
			}
			if err := l.Append(r); err != nil {
				t.Fatal(err)
			}
			want.apply(r)
		}
		return fsys, l, want
	}
	// Count the operations of a complete rewrite.
	fsys, l, want := setup()
	start := fsys.Ops()
	if _, err := l.Rewrite(stateSource{st: want, versions: []uint64{19}}); err != nil {
		t.Fatal(err)
	}
	steps := fsys.Ops() - start
	l.Close()
	if steps < 10 {
		t.Fatalf("a rewrite took %d file operations; the test needs them all", steps)
	}
	for crashAt := range steps + 1 {
		for seed := range uint64(4) {
			fsys, l, want := setup()
			fsys.CrashAfter(crashAt)
			// Removing the superseded files is best effort: a crash
			// there leaves debris for the next Open, not an error.
			l.Rewrite(stateSource{st: want, versions: []uint64{19}})
			l.Close()
			after := fsys.Crash(seed)
			got := state{}
			l2, rep, err := aof.Open(aof.Config{FS: after, Sync: aof.SyncAlways}, 0, got.apply)
			if err != nil {
				t.Fatalf("crash after %d of %d ops (seed %d): reopen: %v", crashAt, steps, seed, err)
			}
			got.equal(t, want)
			if rep.MaxVersion < 19 {
				t.Errorf("crash after %d ops: MaxVersion = %d, want ≥ 19 (the removal's)", crashAt, rep.MaxVersion)
			}
			extra := set("after", "x", 21)
			if err := l2.Append(extra); err != nil {
				t.Fatalf("crash after %d ops: Append after reopen: %v", crashAt, err)
			}
			l2.Close()
			got = state{}
			l3, _, err := aof.Open(aof.Config{FS: after}, 0, got.apply)
			if err != nil {
				t.Fatalf("crash after %d ops: second reopen: %v", crashAt, err)
			}
			l3.Close()
			want.apply(extra)
			got.equal(t, want)
			for _, n := range after.Names() {
				if n != "MANIFEST" && !slices.Contains(manifestFiles(t, after), n) {
					t.Errorf("crash after %d ops: debris %s left after reopen", crashAt, n)
				}
			}
		}
	}
}

func manifestFiles(t *testing.T, fsys *faultfs.FS) []string {
	b, ok := fsys.Contents("MANIFEST")
	if !ok {
		t.Fatal("no MANIFEST")
	}
	var out []string
	for _, line := range splitLines(string(b)) {
		var kind, name string
		if n, _ := fmt.Sscanf(line, "%s %s", &kind, &name); n == 2 && (kind == "base" || kind == "incr") {
			out = append(out, name)
		}
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// lockedModel is an engine stand-in: one mutex over a map, held across
// the append and the change of the map, as the engine holds a shard lock.
type lockedModel struct {
	mu      sync.Mutex
	st      state
	version uint64
	used    uint64 // the highest version a written record carries
}

func (m *lockedModel) Versions() []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return []uint64{m.version}
}

// Records yields the entries a few at a time, releasing the lock between
// chunks, so appends interleave with the iteration as they will with the
// engine's shard-by-shard iteration.
func (m *lockedModel) Records(emit func(*aof.Record) error) error {
	m.mu.Lock()
	keys := slices.Sorted(maps.Keys(m.st))
	m.mu.Unlock()
	for i := 0; i < len(keys); i += 3 {
		var chunk []aof.Record
		m.mu.Lock()
		for _, k := range keys[i:min(i+3, len(keys))] {
			if r, ok := m.st[k]; ok {
				chunk = append(chunk, r)
			}
		}
		m.mu.Unlock()
		for j := range chunk {
			if err := emit(&chunk[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestRewriteWithConcurrentAppends rewrites repeatedly while writers
// append (sets, removes, TTL changes, batches) under the model's lock; the
// reopened log must equal the model exactly.
func TestRewriteWithConcurrentAppends(t *testing.T) {
	for _, p := range []aof.SyncPolicy{aof.SyncAlways, aof.SyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			dir := t.TempDir()
			l, _, err := aof.Open(aof.Config{Dir: dir, Sync: p}, 0, state{}.apply)
			if err != nil {
				t.Fatal(err)
			}
			m := &lockedModel{st: state{}}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						k := fmt.Sprintf("k%d", (i*7+w)%50)
						m.mu.Lock()
						m.version++
						var r *aof.Record
						switch i % 4 {
						case 0, 1:
							r = set(k, fmt.Sprintf("%d-%d", w, i), m.version)
						case 2:
							r = &aof.Record{Op: aof.OpRemove, Key: k, Cause: aof.CauseDeleted}
						case 3:
							r = &aof.Record{Op: aof.OpBatch, Batch: []aof.Record{*set(k+"x", "b", m.version), {Op: aof.OpMeta, Key: k, Deadline: 1 << 62}}}
						}
						if err := l.Append(r); err != nil {
							m.mu.Unlock()
							t.Error(err)
							return
						}
						m.st.apply(r)
						if i%4 != 2 {
							m.used = m.version
						}
						m.mu.Unlock()
					}
				}()
			}
			for range 5 {
				if _, err := l.Rewrite(m); err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got := state{}
			l2, rep, err := aof.Open(aof.Config{Dir: dir}, 0, got.apply)
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			got.equal(t, m.st)
			if rep.MaxVersion < m.used {
				t.Errorf("MaxVersion = %d, want ≥ %d", rep.MaxVersion, m.used)
			}
		})
	}
}

// TestRewriteBusyAndClose: a second concurrent rewrite gets ErrBusy; Close
// aborts a running rewrite, which returns ErrClosed, and the log reopens
// with its data.
func TestRewriteBusyAndClose(t *testing.T) {
	dir := t.TempDir()
	l, _, err := aof.Open(aof.Config{Dir: dir}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	want := state{}
	for i := range 10 {
		r := set(fmt.Sprint(i), "v", uint64(i+1))
		l.Append(r)
		want.apply(r)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	src := blockingSource{stateSource{st: want}, entered, release}
	res := make(chan error)
	go func() {
		_, err := l.Rewrite(src)
		res <- err
	}()
	<-entered
	if _, err := l.Rewrite(stateSource{st: want}); !errors.Is(err, aof.ErrBusy) {
		t.Errorf("concurrent Rewrite = %v, want ErrBusy", err)
	}
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	// Close marks the log closing before it waits for the rewrite; release
	// the source once an append sees the log closed.
	for l.Append(set("x", "y", 99)) == nil {
	}
	close(release)
	if err := <-res; !errors.Is(err, aof.ErrClosed) {
		t.Errorf("Rewrite during Close = %v, want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
	got := state{}
	l2, _, err := aof.Open(aof.Config{Dir: dir}, 0, got.apply)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	delete(got, "x")
	got.equal(t, want)
}

type blockingSource struct {
	stateSource
	entered, release chan struct{}
}

func (b blockingSource) Records(emit func(*aof.Record) error) error {
	close(b.entered)
	<-b.release
	return b.stateSource.Records(emit)
}

// TestSizeTracksRewrite: Size reports the incremental logs growing and a
// rewrite moving the data into the base.
func TestSizeTracksRewrite(t *testing.T) {
	l, _, err := aof.Open(aof.Config{FS: faultfs.New()}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st := state{}
	for i := range 100 {
		r := set("k", fmt.Sprint(i), uint64(i+1)) // one live key, 100 records
		l.Append(r)
		st.apply(r)
	}
	base, incr := l.Size()
	if base != 0 || incr < 100*30 {
		t.Fatalf("Size before rewrite = %d, %d; want no base and ≥ 3000 bytes of log", base, incr)
	}
	rs, err := l.Rewrite(stateSource{st: st, versions: []uint64{100}})
	if err != nil {
		t.Fatal(err)
	}
	base, incr = l.Size()
	if rs.Records != 1 || base != rs.BaseBytes || base > 200 || incr != 16 {
		t.Errorf("after rewrite: stats %+v, Size = %d, %d; want one entry, a small base, an empty log", rs, base, incr)
	}
}
