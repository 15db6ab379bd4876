package engine

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

// TestReview8RestoreOverwritesInPlaceAndAround: Restore stores each entry
// through the write path (putLocked → applyWriteLocked): into an engine
// that holds the same keys with values of the same length (in place, the
// length not stored again), shorter, longer, with and without a TTL and a
// pin, while a View of one of them is blocked in its fn on another
// goroutine. Afterwards every key reads as the snapshot has it (value,
// TTL, pin), the other keys are untouched, Check passes, and the View's
// bytes never changed.
func TestReview8RestoreOverwritesInPlaceAndAround(t *testing.T) {
	src, _ := newTest(t, Config{Shards: 1})
	dst, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: evict.TinyLFU})
	type kv struct {
		k      string
		srcLen int
		srcTTL time.Duration
		srcPin bool
		dstLen int
		dstTTL time.Duration
		dstPin bool
	}
	rows := []kv{
		{"same", 64, NoTTL, false, 64, NoTTL, false},
		{"same-ttl", 64, time.Hour, false, 64, time.Minute, false},
		{"ttl-given", 64, time.Hour, false, 64, NoTTL, false},
		{"ttl-cleared", 64, NoTTL, false, 64, time.Hour, false},
		{"padded", 57, NoTTL, false, 64, NoTTL, false},
		{"grow", 300, NoTTL, false, 8, NoTTL, false},
		{"shrink", 0, NoTTL, false, 200, NoTTL, false},
		{"unpin", 64, NoTTL, false, 64, NoTTL, true},
		{"pin", 64, NoTTL, true, 64, NoTTL, false},
		{"viewed", 64, NoTTL, false, 64, NoTTL, false},
		{"new", 16, time.Hour, true, -1, 0, false},
	}
	val := func(k string, n int, b byte) []byte { return bytes.Repeat([]byte{b ^ byte(len(k))}, n) }
	for _, r := range rows {
		if _, _, err := src.SetWith(r.k, val(r.k, r.srcLen, 's'), SetOptions{TTL: r.srcTTL, Pin: r.srcPin}); err != nil {
			t.Fatal(err)
		}
		if r.dstLen >= 0 {
			if _, _, err := dst.SetWith(r.k, val(r.k, r.dstLen, 'd'), SetOptions{TTL: r.dstTTL, Pin: r.dstPin}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustSet(t, dst, "untouched", "u")
	var snap bytes.Buffer
	if n, err := src.Snapshot(&snap); err != nil || n != len(rows) {
		t.Fatalf("Snapshot = %d, %v; want %d", n, err, len(rows))
	}
	viewed := val("viewed", 64, 'd')
	in, goOn, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		var err error
		if !dst.View("viewed", func(v []byte) {
			close(in)
			<-goOn
			if !bytes.Equal(v, viewed) {
				err = fmt.Errorf("the viewed bytes changed under fn")
			}
		}) {
			err = fmt.Errorf("View missed")
		}
		done <- err
	}()
	<-in
	if n, err := dst.Restore(&snap); err != nil || n != len(rows) {
		t.Fatalf("Restore = %d, %v; want %d", n, err, len(rows))
	}
	mustCheck(t, dst)
	close(goOn)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		want, _ := src.GetItem(r.k)
		got, ok := dst.GetItem(r.k)
		if !ok || !bytes.Equal(got.Value, want.Value) || got.TTL != want.TTL || got.Pinned != want.Pinned {
			t.Errorf("%s: got %d bytes ttl %v pinned %v (%v), want %d bytes ttl %v pinned %v",
				r.k, len(got.Value), got.TTL, got.Pinned, ok, len(want.Value), want.TTL, want.Pinned)
		}
	}
	if v, ok := getS(dst, "untouched"); !ok || v != "u" {
		t.Errorf("untouched = %q, %v", v, ok)
	}
	// Overwrites of the same length after the Restore, in place.
	for _, r := range rows {
		it, _ := dst.GetItem(r.k)
		v := bytes.Repeat([]byte{'z'}, len(it.Value))
		if _, _, err := dst.SetWith(r.k, v, SetOptions{KeepTTL: true}); err != nil {
			t.Fatal(err)
		}
		if got, ok := dst.Get(r.k); !ok || !bytes.Equal(got, v) {
			t.Errorf("%s after an overwrite: %d bytes, want %d", r.k, len(got), len(v))
		}
	}
	mustCheck(t, dst)
}
