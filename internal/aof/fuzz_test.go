package aof_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// seedLog returns a valid incremental log holding every kind of record.
func seedLog(tb testing.TB) []byte {
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncNo}, 0, state{}.apply)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range []*aof.Record{
		set("a", "1", 1),
		{Op: aof.OpSet, Key: "b", Value: []byte("xyz"), Version: 2, Deadline: math.MinInt64, Pinned: true},
		{Op: aof.OpMeta, Key: "a", Deadline: 77, Pinned: true},
		{Op: aof.OpRemove, Key: "b", Version: 2, Cause: aof.CauseEvicted},
		{Op: aof.OpBatch, Batch: []aof.Record{*set("c", "3", 3), {Op: aof.OpRemove, Key: "a", Cause: aof.CauseDeleted}, {Op: aof.OpMeta, Key: "c", Deadline: 5}}},
		{Op: aof.OpVersions, Versions: []uint64{3, 9}},
	} {
		if err := l.Append(r); err != nil {
			tb.Fatal(err)
		}
	}
	l.Close()
	b, _ := fsys.Contents(firstIncr)
	return b
}

// FuzzReadLog opens a log whose incremental log holds arbitrary bytes.
// Open must not panic; it either fails with ErrCorrupt or delivers records
// each of which re-encodes to exactly the bytes at its place in the input
// (so no record is invented), and what it did not deliver is accounted as
// torn or discarded bytes.
func FuzzReadLog(f *testing.F) {
	valid := seedLog(f)
	f.Add(valid, false)
	f.Add(valid[:len(valid)-5], false)
	f.Add(append(bytes.Clone(valid), make([]byte, 30)...), false)
	mid := bytes.Clone(valid)
	mid[40] ^= 1
	f.Add(mid, false)
	f.Add(mid, true)
	f.Add(valid[:10], false)
	f.Fuzz(func(t *testing.T, data []byte, truncate bool) {
		fsys := faultfs.New()
		l, _, err := aof.Open(aof.Config{FS: fsys}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		fsys.SetContents(firstIncr, data)
		cursor := int64(16)
		expired := 0
		apply := func(r *aof.Record) error {
			frame, err := aof.AppendFrame(nil, r)
			if err != nil {
				t.Fatalf("delivered record does not encode: %v", err)
			}
			if int64(len(data)) >= cursor+int64(len(frame)) && bytes.Equal(data[cursor:cursor+int64(len(frame))], frame) {
				cursor += int64(len(frame))
				return nil
			}
			if r.Op == aof.OpRemove && r.Cause == aof.CauseExpired {
				expired++ // a key left due at now: delivered after the replay
				return nil
			}
			t.Fatalf("delivered %+v, which is not the frame at offset %d", r, cursor)
			return nil
		}
		l, rep, err := aof.Open(aof.Config{FS: fsys, TruncateCorrupt: truncate}, math.MinInt64+1, apply)
		if err != nil {
			if !errors.Is(err, aof.ErrCorrupt) {
				t.Fatalf("Open = %v, want nil or ErrCorrupt", err)
			}
			return
		}
		defer l.Close()
		if expired != rep.Due {
			t.Errorf("%d expiry removals delivered, Due = %d", expired, rep.Due)
		}
		if rep.Corruption != nil && rep.Corruption.Offset < 16 {
			cursor = 0 // a damaged header is discarded with the rest
		}
		if end := cursor + rep.TornBytes + rep.DiscardedBytes; end != int64(len(data)) && len(data) >= 16 {
			t.Errorf("delivered up to %d, torn %d, discarded %d: %d bytes of %d unaccounted", cursor, rep.TornBytes, rep.DiscardedBytes, int64(len(data))-end, len(data))
		}
		if b, _ := fsys.Contents(firstIncr); int64(len(b)) != max(cursor, 16) && len(data) >= 16 {
			t.Errorf("log is %d bytes after Open, want it cut to %d", len(b), cursor)
		}
		if err := l.Append(set("after", "x", 1)); err != nil {
			t.Fatalf("Append after Open: %v", err)
		}
	})
}

// FuzzReadSnapshot reads arbitrary bytes as a snapshot. It must not
// panic; a nil error means the input is exactly the snapshot that writing
// the delivered records produces (complete, nothing invented); any other
// outcome is an ErrCorrupt.
func FuzzReadSnapshot(f *testing.F) {
	valid := snapshotOf(f, sampleState(), []uint64{4, 5})
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add(valid[:16])
	f.Add(snapshotOf(f, state{}, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		var versions []uint64
		var recs []aof.Record
		err := aof.ReadSnapshot(bytes.NewReader(data), func(r *aof.Record) error {
			if r.Op == aof.OpVersions {
				versions = append([]uint64{}, r.Versions...)
				return nil
			}
			c := *r
			c.Value = bytes.Clone(r.Value)
			recs = append(recs, c)
			return nil
		})
		if err != nil {
			if !errors.Is(err, aof.ErrCorrupt) {
				t.Fatalf("ReadSnapshot = %v, want nil or ErrCorrupt", err)
			}
			return
		}
		var buf bytes.Buffer
		if _, err := aof.WriteSnapshot(&buf, sliceSource{versions, recs}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("ReadSnapshot accepted %d bytes that are not the snapshot of what it delivered", len(data))
		}
	})
}

type sliceSource struct {
	versions []uint64
	recs     []aof.Record
}

func (s sliceSource) Versions() []uint64 { return s.versions }
func (s sliceSource) Records(emit func(*aof.Record) error) error {
	for i := range s.recs {
		if err := emit(&s.recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// FuzzManifest opens a log whose manifest holds arbitrary bytes: an error
// or a working log, never a panic, and nothing removed on error.
func FuzzManifest(f *testing.F) {
	f.Add([]byte("tide-manifest 1\nincr incr-0000000001.log\ncrc 00000000\n"))
	f.Add([]byte("tide-manifest 1\nbase base-0000000003.snap\nincr incr-0000000002.log\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := faultfs.New()
		l, _, err := aof.Open(aof.Config{FS: fsys}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		l.Append(set("a", "b", 1))
		l.Close()
		fsys.SetContents("MANIFEST", data)
		before := fsys.Names()
		l, _, err = aof.Open(aof.Config{FS: fsys}, 0, state{}.apply)
		if err != nil {
			if after := fsys.Names(); len(after) != len(before) {
				t.Fatalf("failed Open changed the files %v to %v", before, after)
			}
			return
		}
		l.Close()
	})
}
