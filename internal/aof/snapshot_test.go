package aof_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/tidekv/tide/internal/aof"
)

func snapshotOf(t testing.TB, st state, versions []uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := aof.WriteSnapshot(&buf, stateSource{st: st, versions: versions})
	if err != nil || n != len(st) {
		t.Fatalf("WriteSnapshot = %d, %v; want %d entries", n, err, len(st))
	}
	return buf.Bytes()
}

func sampleState() state {
	st := state{}
	for i := range 20 {
		r := &aof.Record{Op: aof.OpSet, Key: fmt.Sprintf("k%02d", i), Value: bytes.Repeat([]byte{byte(i)}, i*3), Version: uint64(100 + i), Pinned: i%3 == 0}
		if i%2 == 0 {
			r.Deadline = int64(1000 * i)
		}
		st.apply(r)
	}
	st.apply(&aof.Record{Op: aof.OpSet, Key: "", Value: nil, Version: 7})
	return st
}

func TestSnapshotRoundTrip(t *testing.T) {
	st := sampleState()
	data := snapshotOf(t, st, []uint64{5, 200, 9})
	got := state{}
	var versions []uint64
	err := aof.ReadSnapshot(bytes.NewReader(data), func(r *aof.Record) error {
		if r.Op == aof.OpVersions {
			versions = append([]uint64(nil), r.Versions...)
			return nil
		}
		return got.apply(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	got.equal(t, st)
	if fmt.Sprint(versions) != "[5 200 9]" {
		t.Errorf("versions = %v, want [5 200 9]", versions)
	}
}

// TestSnapshotTruncated cuts the snapshot at every length: each must be an
// error matching ErrTruncated (or ErrCorrupt), never nil.
func TestSnapshotTruncated(t *testing.T) {
	data := snapshotOf(t, sampleState(), []uint64{1})
	for n := range len(data) {
		err := aof.ReadSnapshot(bytes.NewReader(data[:n]), func(*aof.Record) error { return nil })
		if !errors.Is(err, aof.ErrTruncated) || !errors.Is(err, aof.ErrCorrupt) {
			t.Fatalf("snapshot cut at %d of %d bytes: ReadSnapshot = %v, want ErrTruncated", n, len(data), err)
		}
	}
}

// TestSnapshotDamaged: a flipped bit anywhere, a frame dropped, frames
// swapped, bytes appended: each an ErrCorrupt.
func TestSnapshotDamaged(t *testing.T) {
	data := snapshotOf(t, sampleState(), []uint64{1})
	check := func(name string, b []byte) {
		t.Helper()
		err := aof.ReadSnapshot(bytes.NewReader(b), func(*aof.Record) error { return nil })
		if !errors.Is(err, aof.ErrCorrupt) {
			t.Errorf("%s: ReadSnapshot = %v, want ErrCorrupt", name, err)
		}
	}
	for i := range len(data) {
		b := bytes.Clone(data)
		b[i] ^= 0x20
		check(fmt.Sprintf("bit flip at %d", i), b)
	}
	frames := splitFrames(data[16:])
	for i := 1; i < len(frames)-1; i++ {
		var b []byte
		b = append(b, data[:16]...)
		for j, f := range frames {
			if j != i {
				b = append(b, f...)
			}
		}
		check(fmt.Sprintf("frame %d dropped", i), b)
	}
	swapped := append(bytes.Clone(data[:16]), frames[0]...)
	swapped = append(swapped, frames[2]...)
	swapped = append(swapped, frames[1]...)
	for _, f := range frames[3:] {
		swapped = append(swapped, f...)
	}
	check("frames swapped", swapped)
	check("bytes after the end", append(bytes.Clone(data), 0))
	check("log instead of snapshot", append([]byte("tide-aof"), data[8:]...))
}

func splitFrames(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 8 {
		n := 8 + int(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// TestSnapshotCallbackErrorAndReaderError: fn's error and the reader's
// error come back as they are.
func TestSnapshotCallbackErrorAndReaderError(t *testing.T) {
	data := snapshotOf(t, sampleState(), nil)
	stop := errors.New("stop")
	if err := aof.ReadSnapshot(bytes.NewReader(data), func(*aof.Record) error { return stop }); err != stop {
		t.Errorf("ReadSnapshot with failing fn = %v, want it", err)
	}
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader(data[:100]), errReader{boom})
	if err := aof.ReadSnapshot(r, func(*aof.Record) error { return nil }); !errors.Is(err, boom) {
		t.Errorf("ReadSnapshot with failing reader = %v, want boom", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestSnapshotOnlySets: a source yielding anything but sets is refused.
func TestSnapshotOnlySets(t *testing.T) {
	st := state{"a": {Op: aof.OpRemove, Key: "a", Cause: aof.CauseDeleted}}
	if _, err := aof.WriteSnapshot(io.Discard, stateSource{st: st}); !errors.Is(err, aof.ErrInvalidRecord) {
		t.Errorf("WriteSnapshot of a removal = %v, want ErrInvalidRecord", err)
	}
}

// TestHostileLength: a frame header claiming 1 GiB (a length within
// MaxRecordSize on 32- and 64-bit platforms alike) on a short stream must
// fail as truncated without allocating the gigabyte.
func TestHostileLength(t *testing.T) {
	data := snapshotOf(t, state{}, nil)[:16]
	data = append(data, 0, 0, 0, 0x40, 0, 0, 0, 0, 1, 2, 3)
	var ms1, ms2 runtimeMem
	ms1.read()
	err := aof.ReadSnapshot(bytes.NewReader(data), func(*aof.Record) error { return nil })
	ms2.read()
	if !errors.Is(err, aof.ErrTruncated) {
		t.Errorf("ReadSnapshot = %v, want ErrTruncated", err)
	}
	if d := ms2.total - ms1.total; d > 64<<20 {
		t.Errorf("reading a hostile length allocated %d bytes", d)
	}
}
