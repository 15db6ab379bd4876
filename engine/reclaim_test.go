package engine

import (
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
)

// TestExpiryCycleReclaimsEmptyRecordsAtTheArenaEnd guards the expiry
// cycle's cache warming against records at the limit of their shapes: an
// empty key with an empty value is a bare header, and as a shard's last
// record it ends exactly at the end of the arena, so nothing may be read
// past the header. Every shape must be removed when due, and only then.
func TestExpiryCycleReclaimsEmptyRecordsAtTheArenaEnd(t *testing.T) {
	tests := []struct {
		name, key string
		value     []byte
	}{
		{"empty key and value", "", nil},
		{"empty key", "", []byte("v")},
		{"empty value", "k", nil},
		{"one byte each", "k", []byte("v")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(time.Unix(1_700_000_000, 0))
			e, err := New(Config{Clock: clk, Shards: 1, ExpiryInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			// Closed at the end, not deferred: a panic under the shard
			// lock must fail the test, not hang it in Close.
			if _, err := e.SetTTL("other", []byte("x"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if _, err := e.SetTTL(tt.key, tt.value, time.Second); err != nil {
				t.Fatal(err)
			}
			if n, _ := e.RunExpiryCycle(); n != 0 {
				t.Fatalf("a cycle before the deadline removed %d entries", n)
			}
			clk.Advance(time.Second)
			if n, more := e.RunExpiryCycle(); n != 1 || more {
				t.Fatalf("RunExpiryCycle at the deadline = %d,%v want 1,false", n, more)
			}
			if _, ok := e.Get(tt.key); ok {
				t.Fatal("the due entry is still served")
			}
			if _, ok := e.Get("other"); !ok {
				t.Fatal("the entry not yet due is gone")
			}
			if err := e.Check(); err != nil {
				t.Fatal(err)
			}
			e.Close()
		})
	}
}
