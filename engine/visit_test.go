package engine_test

import (
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

// TestWriteThatVisitsOtherShardsDoesNotEvictItsOwnKey: a write whose shard
// cannot free enough room makes room in the other shards one at a time,
// its own shard included; the key it overwrites is never a victim of the
// room made for itself (it is replaced, not evicted).
func TestWriteThatVisitsOtherShardsDoesNotEvictItsOwnKey(t *testing.T) {
	var removed []engine.Removal
	e, err := engine.New(engine.Config{Shards: 2, MaxBytes: 1000, Policy: evict.AllKeysLRU,
		Clock: clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), ExpiryInterval: -1,
		OnRemove: func(r engine.Removal) { removed = append(removed, r) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The first visit starts at shard 1: own lives there, so the visit
	// meets it before the other shard's entries.
	own := keysInShard(e, 1, 1, "own")[0]
	others := keysInShard(e, 0, 4, "other")
	// own is the least recently used entry of the engine.
	if _, err := e.Set(own, make([]byte, 36)); err != nil { // 100 bytes accounted
		t.Fatal(err)
	}
	for _, k := range others { // 4 × 200 bytes: 900 of 1000 used
		if _, err := e.Set(k, make([]byte, 136-len(k))); err != nil {
			t.Fatal(err)
		}
	}
	// Growing own to 400 bytes needs 300 more: its shard has nothing else,
	// so the write visits the shards, its own (where own is LRU) first.
	if _, err := e.Set(own, make([]byte, 336-len(own))); err != nil {
		t.Fatal(err)
	}
	for _, r := range removed {
		if r.Key == own && r.Cause != engine.CauseReplaced {
			t.Errorf("%q removed with cause %v by a write to itself, want only %v", own, r.Cause, engine.CauseReplaced)
		}
	}
	if v, ok := e.Get(own); !ok || len(v) != 336-len(own) {
		t.Errorf("Get(%q) = %d bytes, %v; want the new value", own, len(v), ok)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}
