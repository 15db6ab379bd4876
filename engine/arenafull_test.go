package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
)

// lowerMaxArena makes every shard's arena limit n bytes for the test, so
// that a test can fill an arena without gigabytes of memory.
func lowerMaxArena(t *testing.T, n int64) {
	t.Helper()
	old := maxArena
	maxArena = n
	t.Cleanup(func() { maxArena = old })
}

// fillArena writes keys without a TTL into e's single shard until a write
// fails for want of arena (ErrOutOfMemory), and returns the keys written.
func fillArena(t *testing.T, e *Engine, value []byte) []string {
	t.Helper()
	var keys []string
	for i := 0; ; i++ {
		k := fmt.Sprintf("key-%04d", i)
		if _, err := e.Set(k, value); err != nil {
			if !errors.Is(err, ErrOutOfMemory) {
				t.Fatalf("Set %q: %v, want ErrOutOfMemory once the arena is full", k, err)
			}
			break
		}
		keys = append(keys, k)
	}
	if len(keys) < 2 {
		t.Fatalf("only %d keys fit the arena", len(keys))
	}
	return keys
}

// Giving a TTL to a key whose record has no deadline word moves the
// record, and the old one stays live while it is copied: in an arena whose
// live bytes leave no room for the copy, the change fails with
// ErrOutOfMemory (as a write of the same bytes does) and leaves the key as
// it was, never a panic with the shard's lock held.
func TestTTLOnAKeyInAFullArenaIsOutOfMemory(t *testing.T) {
	value := make([]byte, 100)
	tests := []struct {
		name string
		ttl  func(e *Engine, key string) error
	}{
		{"Expire", func(e *Engine, key string) error {
			_, err := e.Expire(key, time.Minute, ExpireConditionAlways)
			return err
		}},
		{"ExpireAt", func(e *Engine, key string) error {
			_, err := e.ExpireAt(key, t0.Add(time.Minute), ExpireConditionNX)
			return err
		}},
		{"GetAndExpire", func(e *Engine, key string) error {
			_, _, err := e.GetAndExpire(key, time.Minute)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lowerMaxArena(t, 4096)
			e, _ := newTest(t, Config{Shards: 1})
			keys := fillArena(t, e, value)
			v0, _ := e.GetItem(keys[0])
			err := tt.ttl(e, keys[0])
			if !errors.Is(err, ErrOutOfMemory) {
				t.Fatalf("%s on a full arena = %v, want ErrOutOfMemory", tt.name, err)
			}
			mustCheck(t, e)
			it, ok := e.GetItem(keys[0])
			if !ok || it.TTL != NoTTL || it.Version != v0.Version || len(it.Value) != len(value) {
				t.Fatalf("after the failed %s: %+v, %v; want the key unchanged, without TTL", tt.name, it, ok)
			}
			// The shard still works: a key that has room takes a TTL.
			if !e.Delete(keys[1]) {
				t.Fatalf("Delete %q missed", keys[1])
			}
			if err := tt.ttl(e, keys[0]); err != nil {
				t.Fatalf("%s once a key was deleted: %v", tt.name, err)
			}
			if ttl, ok := e.TTL(keys[0]); !ok || ttl != time.Minute {
				t.Fatalf("TTL = %v, %v; want 1m", ttl, ok)
			}
			mustCheck(t, e)
		})
	}
}

// Replaying a log whose TTL changes (OpMeta) would move records past a
// shard's arena limit (a log written with more room per shard) fails the
// recovery with ErrOutOfMemory, as replaying a set does, never a panic.
func TestReplayOfATTLPastTheArenaLimitIsOutOfMemory(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(t0)
	e := mustOpenDurable(t, nil, dir, clk, Config{Shards: 1})
	const n = 20
	value := make([]byte, 100)
	for i := range n {
		if _, err := e.Set(fmt.Sprintf("key-%04d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if _, err := e.Expire(fmt.Sprintf("key-%04d", i), time.Hour, ExpireConditionAlways); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Room for every set, not for moving a record to give it its TTL.
	bare := int64(recSize(len("key-0000"), len(value), 0))
	lowerMaxArena(t, n*bare+bare)
	e, err := openDurable(t, nil, dir, clk, Config{Shards: 1})
	if err == nil {
		e.Close()
		t.Fatal("recovery succeeded past the arena limit")
	}
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("recovery = %v, want ErrOutOfMemory", err)
	}
}
