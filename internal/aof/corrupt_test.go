package aof_test

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

const firstIncr = "incr-0000000001.log"

// written builds a log of n sets in a fresh file system and returns it,
// the state, and each frame's offset in the incremental log (plus its end).
func written(t *testing.T, n int) (*faultfs.FS, state, []int64) {
	t.Helper()
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	st := state{}
	offs := []int64{16}
	for i := range n {
		r := set(fmt.Sprintf("key%d", i), fmt.Sprintf("value-%d", i), uint64(i+1))
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
		st.apply(r)
		b, _ := aof.AppendFrame(nil, r)
		offs = append(offs, offs[len(offs)-1]+int64(len(b)))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys, st, offs
}

func without(st state, keys ...string) state {
	out := state{}
	for k, v := range st {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// TestTornTail damages the end of the log as a crash can and checks that
// Open cuts it off, counts it, and keeps every complete record.
func TestTornTail(t *testing.T) {
	const n = 5
	_, _, offs := written(t, n)
	last := offs[n-1]
	lastLen := offs[n] - last
	type damage struct {
		name string
		f    func([]byte) []byte
		torn int64
	}
	var cases []damage
	for cut := int64(1); cut < lastLen; cut++ {
		cases = append(cases, damage{fmt.Sprintf("cut %d bytes", cut), func(b []byte) []byte { return b[:len(b)-int(cut)] }, lastLen - cut})
	}
	cases = append(cases,
		damage{"bad checksum in the last frame", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, lastLen},
		damage{"zeros after a partial frame", func(b []byte) []byte { return append(b[:len(b)-3], make([]byte, 100)...) }, lastLen - 3 + 100},
		damage{"zeros over the last frame", func(b []byte) []byte { clear(b[last:]); return b }, lastLen},
		damage{"length prefix only", func(b []byte) []byte { return b[:last+4] }, 4},
		damage{"garbage after the last frame", func(b []byte) []byte {
			return append(b, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 50)...)
		}, 0},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys, st, _ := written(t, n)
			data, _ := fsys.Contents(firstIncr)
			fsys.SetContents(firstIncr, c.f(data))
			want := without(st, fmt.Sprintf("key%d", n-1))
			if c.name == "garbage after the last frame" {
				want, c.torn = st, 200
			}
			got := state{}
			l, rep, err := aof.Open(aof.Config{FS: fsys}, 0, got.apply)
			if err != nil {
				t.Fatalf("Open = %v, want a torn tail cut off", err)
			}
			got.equal(t, want)
			if rep.TornBytes != c.torn {
				t.Errorf("TornBytes = %d, want %d", rep.TornBytes, c.torn)
			}
			if err := l.Append(set("new", "n", 100)); err != nil {
				t.Fatal(err)
			}
			l.Close()
			got = state{}
			_, rep, err = aof.Open(aof.Config{FS: fsys}, 0, got.apply)
			if err != nil || rep.TornBytes != 0 {
				t.Fatalf("second Open = %v, torn %d; want a clean log", err, rep.TornBytes)
			}
			want.apply(set("new", "n", 100))
			got.equal(t, want)
		})
	}
}

// TestCorruptionInTheMiddle flips one bit in each frame but the last:
// Open fails with a CorruptError naming the file and the frame's offset,
// and with TruncateCorrupt it keeps the records before it.
func TestCorruptionInTheMiddle(t *testing.T) {
	const n = 6
	for i := range n - 1 {
		for _, at := range []string{"length", "checksum", "payload"} {
			t.Run(fmt.Sprintf("frame %d %s", i, at), func(t *testing.T) {
				fsys, st, offs := written(t, n)
				data, _ := fsys.Contents(firstIncr)
				pos := offs[i] + map[string]int64{"length": 1, "checksum": 5, "payload": 12}[at]
				data[pos] ^= 0x10
				fsys.SetContents(firstIncr, data)
				_, _, err := aof.Open(aof.Config{FS: fsys}, 0, state{}.apply)
				var ce *aof.CorruptError
				if !errors.Is(err, aof.ErrCorrupt) || !errors.As(err, &ce) {
					t.Fatalf("Open = %v, want a CorruptError", err)
				}
				if ce.File != firstIncr || ce.Offset != offs[i] {
					t.Errorf("corruption at %s:%d, want %s:%d", ce.File, ce.Offset, firstIncr, offs[i])
				}
				got := state{}
				l, rep, err := aof.Open(aof.Config{FS: fsys, TruncateCorrupt: true}, 0, got.apply)
				if err != nil {
					t.Fatalf("Open with TruncateCorrupt = %v", err)
				}
				defer l.Close()
				want := state{}
				for j := range i {
					want.apply(set(fmt.Sprintf("key%d", j), fmt.Sprintf("value-%d", j), uint64(j+1)))
				}
				_ = st
				got.equal(t, want)
				if rep.Corruption == nil || rep.Corruption.Offset != offs[i] || rep.DiscardedBytes != offs[n]-offs[i] {
					t.Errorf("recovery = %+v, want corruption at %d and %d bytes discarded", rep, offs[i], offs[n]-offs[i])
				}
			})
		}
	}
}

// TestCorruptionDiscardsLaterLogs: with TruncateCorrupt, a cut in an
// earlier incremental log discards the later ones too (their records
// depended on what was cut), and the manifest stops naming them.
func TestCorruptionDiscardsLaterLogs(t *testing.T) {
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l.Append(set(fmt.Sprint("a", i), "v", uint64(i+1)))
	}
	// A rewrite whose base fails leaves the manifest naming two logs.
	fsys.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
		if op == faultfs.OpRename && name == "base-0000000003.tmp" {
			return &faultfs.Fault{Err: syscall.EIO}
		}
		return nil
	})
	if _, err := l.Rewrite(stateSource{st: state{}}); err == nil {
		t.Fatal("Rewrite with a failing rename = nil")
	}
	fsys.SetHook(nil)
	l.Append(set("b", "v", 10))
	l.Close()
	if got := manifestFiles(t, fsys); len(got) != 2 {
		t.Fatalf("manifest names %v, want two logs", got)
	}
	data, _ := fsys.Contents(firstIncr)
	data[16+3] ^= 1 // first frame's length
	fsys.SetContents(firstIncr, data)
	got := state{}
	l, rep, err := aof.Open(aof.Config{FS: fsys, TruncateCorrupt: true}, 0, got.apply)
	if err != nil {
		t.Fatal(err)
	}
	got.equal(t, state{})
	if rep.Corruption == nil || rep.DiscardedBytes <= int64(len(data))-16 {
		t.Errorf("recovery = %+v, want the first log's records and the second log discarded", rep)
	}
	l.Append(set("c", "v", 11))
	l.Close()
	if got := manifestFiles(t, fsys); len(got) != 1 {
		t.Errorf("manifest names %v, want one log", got)
	}
	got = state{}
	if _, _, err := aof.Open(aof.Config{FS: fsys}, 0, got.apply); err != nil {
		t.Fatal(err)
	}
	got.equal(t, state{"c": *set("c", "v", 11)})
}

// TestDamagedBaseAndManifest: damage to the base or the manifest is always
// an error (they were complete and synced before use), never a silent
// partial recovery; a missing manifest beside data is an error too, not a
// fresh start that would delete the data.
func TestDamagedBaseAndManifest(t *testing.T) {
	build := func(t *testing.T) *faultfs.FS {
		fsys, st, _ := written(t, 4)
		l, _, err := aof.Open(aof.Config{FS: fsys}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Rewrite(stateSource{st: st, versions: []uint64{4}}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		return fsys
	}
	tests := []struct {
		name   string
		damage func(*faultfs.FS)
	}{
		{"base bit flip", func(fs *faultfs.FS) { flip(fs, "base-0000000003.snap", 40) }},
		{"base truncated", func(fs *faultfs.FS) { chop(fs, "base-0000000003.snap", 5) }},
		{"manifest bit flip", func(fs *faultfs.FS) { flip(fs, "MANIFEST", 20) }},
		{"manifest truncated", func(fs *faultfs.FS) { chop(fs, "MANIFEST", 3) }},
		{"manifest missing", func(fs *faultfs.FS) { fs.Remove("MANIFEST") }},
		{"named log missing", func(fs *faultfs.FS) { fs.Remove("incr-0000000002.log") }},
		{"log header damaged", func(fs *faultfs.FS) { flip(fs, "incr-0000000002.log", 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := build(t)
			tt.damage(fsys)
			before := fsys.Names()
			_, _, err := aof.Open(aof.Config{FS: fsys, TruncateCorrupt: tt.name == "base bit flip"}, 0, state{}.apply)
			if err == nil {
				t.Fatal("Open = nil, want an error")
			}
			if tt.name != "named log missing" && !errors.Is(err, aof.ErrCorrupt) {
				t.Errorf("Open = %v, want ErrCorrupt", err)
			}
			if after := fsys.Names(); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("files %v became %v: a failed Open must not remove anything", before, after)
			}
		})
	}
}

func flip(fs *faultfs.FS, name string, at int) {
	b, _ := fs.Contents(name)
	b[at] ^= 0x04
	fs.SetContents(name, b)
}

func chop(fs *faultfs.FS, name string, n int) {
	b, _ := fs.Contents(name)
	fs.SetContents(name, b[:len(b)-n])
}

// TestForeignFilesKept: Open removes only debris with the log's own names.
func TestForeignFilesKept(t *testing.T) {
	fsys := faultfs.New()
	fsys.SetContents("notes.txt", []byte("mine"))
	fsys.SetContents("incr-12.log", []byte("not ours: wrong width"))
	fsys.SetContents("base-0000000009.tmp", []byte("debris"))
	l, _, err := aof.Open(aof.Config{FS: fsys}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	got := fmt.Sprint(fsys.Names())
	if want := "[MANIFEST incr-0000000001.log incr-12.log notes.txt]"; got != want {
		t.Errorf("files = %s, want %s", got, want)
	}
}

// BaseSize hands the caller a base's size before the replay, so that it
// can size its storage; a base whose last bytes are not an end frame (cut,
// zero-filled or sparse past its end, damaged) gets no hint: an attacker's
// or a crash's huge file must fail the read, not make the caller reserve
// memory for it first.
func TestBaseSizeHintOnlyForACompleteBase(t *testing.T) {
	build := func(t *testing.T) *faultfs.FS {
		fsys := faultfs.New()
		l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		st := state{}
		for i := range 50 {
			r := set(fmt.Sprintf("k%d", i), "value", uint64(i+1))
			if err := l.Append(r); err != nil {
				t.Fatal(err)
			}
			st.apply(r)
		}
		if _, err := l.Rewrite(stateSource{st: st, versions: []uint64{50}}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		return fsys
	}
	const base = "base-0000000003.snap"
	tests := []struct {
		name     string
		damage   func(*faultfs.FS)
		wantHint bool
	}{
		{"complete", func(*faultfs.FS) {}, true},
		{"cut", func(fs *faultfs.FS) { chop(fs, base, 5) }, false},
		{"zeros appended", func(fs *faultfs.FS) {
			b, _ := fs.Contents(base)
			fs.SetContents(base, append(b, make([]byte, 1<<20)...))
		}, false},
		{"end frame damaged", func(fs *faultfs.FS) {
			b, _ := fs.Contents(base)
			flip(fs, base, len(b)-3)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := build(t)
			tt.damage(fsys)
			b, ok := fsys.Contents(base)
			if !ok {
				t.Fatalf("no %s: the rewrite names its base differently", base)
			}
			var hints []int64
			l, _, err := aof.Open(aof.Config{FS: fsys, BaseSize: func(n int64) { hints = append(hints, n) }}, 0, state{}.apply)
			if err == nil {
				l.Close()
			}
			switch {
			case tt.wantHint && (err != nil || len(hints) != 1 || hints[0] != int64(len(b))):
				t.Errorf("Open = %v, hints %v; want nil and one hint of %d", err, hints, len(b))
			case !tt.wantHint && (len(hints) != 0 || !errors.Is(err, aof.ErrCorrupt)):
				t.Errorf("Open = %v, hints %v; want ErrCorrupt and no hint", err, hints)
			}
		})
	}
}
