package engine

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

// Restore evicts nothing, so a snapshot whose entries alone account more
// than MaxBytes could only stop at ErrOutOfMemory part way, after storing
// the entries that fit: it is refused before anything is stored. Entries
// due at the start do not count. Each row restores into an engine that
// already holds a key "other" (which stays, as keys the snapshot does not
// hold do).
func TestRestoreRefusesASnapshotOverTheCapBeforeStoring(t *testing.T) {
	const n, vlen = 64, 1000
	entry := int64(len("k000")) + vlen + EntryOverhead
	other := int64(len("other")) + 1 + EntryOverhead
	src, srcClk := newTest(t, Config{Shards: 1})
	for i := range n {
		if _, err := src.Set(fmt.Sprintf("k%03d", i), bytes.Repeat([]byte{byte(i)}, vlen)); err != nil {
			t.Fatal(err)
		}
	}
	var full bytes.Buffer
	if _, err := src.Snapshot(&full); err != nil {
		t.Fatal(err)
	}
	// Half the keys with a TTL that ends before the restore.
	for i := 0; i < n; i += 2 {
		if _, err := src.Expire(fmt.Sprintf("k%03d", i), time.Minute, ExpireConditionAlways); err != nil {
			t.Fatal(err)
		}
	}
	var half bytes.Buffer
	if _, err := src.Snapshot(&half); err != nil {
		t.Fatal(err)
	}
	_ = srcClk
	tests := []struct {
		name     string
		snap     []byte
		maxBytes int64
		advance  time.Duration
		want     int // entries restored; -1: ErrOutOfMemory, nothing stored
	}{
		{"exactly the cap", full.Bytes(), n*entry + other, 0, n},
		{"the snapshot alone a byte over", full.Bytes(), n*entry - 1, 0, -1},
		{"a tenth of it", full.Bytes(), n*entry/10 + other, 0, -1},
		{"half of it due", half.Bytes(), n/2*entry + other, time.Hour, n / 2},
		{"half of it due, the cap a byte below that", half.Bytes(), n/2*entry - 1, time.Hour, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst, clk := newTest(t, Config{Shards: 1, MaxBytes: tt.maxBytes, Policy: evict.AllKeysLRU})
			if _, err := dst.Set("other", []byte("o")); err != nil {
				t.Fatal(err)
			}
			clk.Advance(tt.advance)
			got, err := dst.Restore(bytes.NewReader(tt.snap))
			if tt.want < 0 {
				if !errors.Is(err, ErrOutOfMemory) || got != 0 {
					t.Fatalf("Restore = %d, %v; want 0, ErrOutOfMemory", got, err)
				}
				if dst.Len() != 1 {
					t.Fatalf("after a refused Restore the engine holds %d keys, want 1 (nothing stored)", dst.Len())
				}
			} else if err != nil || got != tt.want || dst.Len() != tt.want+1 {
				t.Fatalf("Restore = %d, %v, engine Len %d; want %d, nil, %d", got, err, dst.Len(), tt.want, tt.want+1)
			}
			if v, ok := dst.Get("other"); !ok || string(v) != "o" {
				t.Fatalf("other = %q, %v; want \"o\"", v, ok)
			}
			mustCheck(t, dst)
		})
	}
}

// A snapshot far larger than MaxBytes is refused holding about MaxBytes of
// it, not read whole into memory first: 16 MiB of values against a 1 MiB
// cap.
func TestRestoreHoldsAboutTheCap(t *testing.T) {
	src, _ := newTest(t, Config{Shards: 1})
	for i := range 256 {
		if _, err := src.Set(fmt.Sprintf("k%03d", i), bytes.Repeat([]byte{byte(i)}, 64<<10)); err != nil {
			t.Fatal(err)
		}
	}
	var snap bytes.Buffer
	if _, err := src.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	dst, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err := dst.Restore(bytes.NewReader(snap.Bytes()))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrOutOfMemory) || n != 0 {
		t.Fatalf("Restore = %d, %v; want 0, ErrOutOfMemory", n, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 6<<20 {
		t.Fatalf("Restore allocated %d MiB for a 16 MiB snapshot against a 1 MiB cap, want at most 6", got>>20)
	}
}
