package aof_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// allocated returns the bytes f allocates (TotalAlloc: every allocation of
// the process; the tests here run nothing concurrently).
func allocated(f func()) uint64 {
	var before, after runtimeMem
	before.read()
	f()
	after.read()
	return after.total - before.total
}

// damagedRegion is the size of what follows the damage in the tests below:
// Open must not allocate memory in proportion to it (nor to what a length
// field claims), only bounded buffers.
const (
	damagedRegion = 8 << 20
	allocBound    = 4 << 20
)

// frameHeaderBytes returns a frame header claiming length bytes, with a
// checksum that matches nothing.
func frameHeaderBytes(length uint32) []byte {
	h := binary.LittleEndian.AppendUint32(nil, length)
	return binary.LittleEndian.AppendUint32(h, 0xdeadbeef)
}

// bigValue is the value size of bigFrames: its frames are longer than the
// window through which a damaged region is scanned.
const bigValue = 300 << 10

// bigFrames returns n valid frames of sets with bigValue-byte values,
// versions from v on.
func bigFrames(t *testing.T, n int, v uint64) []byte {
	t.Helper()
	var out []byte
	for i := range n {
		var err error
		out, err = aof.AppendFrame(out, &aof.Record{Op: aof.OpSet, Key: fmt.Sprintf("big%d", i), Value: make([]byte, bigValue), Version: v + uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestOpenAllocationIsBoundedByWhatItReads: one damaged frame (a length
// field that claims up to 4 GiB, a checksum that does not match) must
// not make Open allocate the claimed length or the rest of the file: a
// byte written into the directory must not be able to exhaust memory.
func TestOpenAllocationIsBoundedByWhatItReads(t *testing.T) {
	tests := []struct {
		name     string
		damage   func(t *testing.T) []byte // what follows the last good record
		truncate bool
		wantErr  error // nil: a torn tail
	}{
		{"4 GiB claimed, zeros after", func(t *testing.T) []byte {
			return append(frameHeaderBytes(1<<32-1), make([]byte, damagedRegion)...)
		}, false, nil},
		{"the rest of the file claimed, bad checksum", func(t *testing.T) []byte {
			return append(frameHeaderBytes(damagedRegion), make([]byte, damagedRegion)...)
		}, false, nil},
		{"4 GiB claimed, valid frames after", func(t *testing.T) []byte {
			return append(frameHeaderBytes(1<<32-1), bigFrames(t, damagedRegion/bigValue, 100)...)
		}, false, aof.ErrCorrupt},
		{"4 GiB claimed, valid frames after, TruncateCorrupt", func(t *testing.T) []byte {
			return append(frameHeaderBytes(1<<32-1), bigFrames(t, damagedRegion/bigValue, 100)...)
		}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, st, _ := written(t, 3)
			b, _ := fsys.Contents(firstIncr)
			fsys.SetContents(firstIncr, append(b, tt.damage(t)...))
			got := state{}
			var l *aof.Log
			var rep aof.Recovery
			var err error
			n := allocated(func() {
				l, rep, err = aof.Open(aof.Config{FS: fsys, TruncateCorrupt: tt.truncate}, 0, got.apply)
			})
			if err == nil {
				l.Close()
			}
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("Open = %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Open = %v, want nil", err)
			case tt.wantErr == nil:
				got.equal(t, st)
			}
			if tt.truncate && rep.MaxVersion < 100+damagedRegion/bigValue-1 {
				t.Errorf("MaxVersion = %d, want the discarded records' versions (up to %d)", rep.MaxVersion, 100+damagedRegion/bigValue-1)
			}
			if n > allocBound {
				t.Errorf("Open allocated %d MiB for a damaged region of %d MiB, want < %d MiB", n>>20, damagedRegion>>20, allocBound>>20)
			}
		})
	}
}

// TestOpenAllocationIsBoundedInTheBase: the same for a base (snapshot)
// whose first frame claims the rest of the file with a wrong checksum.
func TestOpenAllocationIsBoundedInTheBase(t *testing.T) {
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Rewrite(stateSource{st: state{}, versions: []uint64{1}}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	var base string
	for _, n := range fsys.Names() {
		if strings.HasPrefix(n, "base-") {
			base = n
		}
	}
	b, _ := fsys.Contents(base)
	b = append(b[:16], frameHeaderBytes(damagedRegion)...)
	fsys.SetContents(base, append(b, make([]byte, damagedRegion)...))
	n := allocated(func() {
		l, _, err = aof.Open(aof.Config{FS: fsys}, 0, state{}.apply)
	})
	if err == nil {
		l.Close()
		t.Fatal("Open = nil, want ErrCorrupt for the damaged base")
	}
	if !errors.Is(err, aof.ErrCorrupt) {
		t.Errorf("Open = %v, want ErrCorrupt", err)
	}
	if n > allocBound {
		t.Errorf("Open allocated %d MiB for a damaged base of %d MiB, want < %d MiB", n>>20, damagedRegion>>20, allocBound>>20)
	}
}
