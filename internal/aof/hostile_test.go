package aof_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// manifestText returns a manifest listing lines, with its checksum.
func manifestText(lines ...string) []byte {
	var b bytes.Buffer
	b.WriteString("tide-manifest 1\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "crc %08x\n", crc32.Checksum(b.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	return b.Bytes()
}

// TestHostileManifests: a crafted manifest is an ErrCorrupt naming it,
// never a panic, a file outside the directory or an allocation in
// proportion to its claimed size; and nothing is removed.
func TestHostileManifests(t *testing.T) {
	huge := append(manifestText("incr incr-0000000001.log"), bytes.Repeat([]byte("incr incr-0000000001.log\n"), (damagedRegion)/25)...)
	tests := []struct {
		name string
		data []byte
	}{
		{"path in a name", manifestText("incr ../incr-0000000001.log")},
		{"absolute path", manifestText("incr /tmp/incr-0000000001.log")},
		{"separator inside the number", manifestText("incr incr-000000/001.log")},
		{"duplicate incremental log", manifestText("incr incr-0000000001.log", "incr incr-0000000001.log")},
		{"duplicate base", manifestText("base base-0000000003.snap", "base base-0000000003.snap", "incr incr-0000000001.log")},
		{"base after a log", manifestText("incr incr-0000000001.log", "base base-0000000003.snap")},
		{"eleven digits", manifestText("incr incr-10000000000.log")},
		{"no log", manifestText()},
		{"huge", huge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, _, _ := written(t, 2)
			fsys.SetContents("MANIFEST", tt.data)
			before := fmt.Sprint(fsys.Names())
			var err error
			n := allocated(func() {
				var l *aof.Log
				if l, _, err = aof.Open(aof.Config{FS: fsys}, 0, state{}.apply); err == nil {
					l.Close()
				}
			})
			var ce *aof.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, aof.ErrCorrupt) || ce.File != "MANIFEST" {
				t.Errorf("Open = %v, want an ErrCorrupt naming MANIFEST", err)
			}
			if after := fmt.Sprint(fsys.Names()); after != before {
				t.Errorf("files %s became %s", before, after)
			}
			if n > allocBound {
				t.Errorf("Open allocated %d MiB for a manifest of %d MiB, want < %d MiB", n>>20, len(tt.data)>>20, allocBound>>20)
			}
		})
	}
}

// TestFileNumbersRunOut: a manifest may name the highest file number a
// name has room for (ten digits). A rewrite must then fail, not write a
// manifest naming an eleven-digit file that no Open would read again.
func TestFileNumbersRunOut(t *testing.T) {
	fsys := faultfs.New()
	const last = "incr-9999999999.log"
	h, _ := func() ([]byte, bool) {
		f, _, _ := written(t, 0)
		return f.Contents(firstIncr)
	}()
	fsys.SetContents(last, h)
	fsys.SetContents("MANIFEST", manifestText("incr "+last))
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(set("a", "1", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Rewrite(stateSource{st: state{"a": *set("a", "1", 1)}}); err == nil {
		t.Error("Rewrite past the last file number = nil, want an error")
	}
	if err := l.Append(set("b", "2", 2)); err != nil {
		t.Fatalf("Append after the refused rewrite: %v", err)
	}
	l.Close()
	l, got, _ := open(t, aof.Config{FS: fsys}, 0)
	l.Close()
	got.equal(t, state{"a": *set("a", "1", 1), "b": *set("b", "2", 2)})
}
