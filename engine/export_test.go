package engine

import (
	"testing"

	"github.com/tidekv/tide/internal/aof"
)

// ShardIndex returns the index of the shard that holds key. The placement
// depends on the engine's secret hash seed, so tests that need keys in a
// given shard pick them with this rather than with a hash of their own.
func (e *Engine) ShardIndex(key string) int {
	_, h := e.shardFor(key)
	return int(h & e.mask)
}

// SetLogFS makes d log to fsys (a faultfs.FS in tests) instead of a
// directory, for tests outside package engine that inject log faults.
func SetLogFS(d *Durability, fsys aof.FS) { d.fs = fsys }

// lockSlot takes the exclusive lock of key's shard and returns the shard,
// the key's hash and its slot; the caller unlocks s.mu. It fails the test
// (unlocking) if key is not live.
func lockSlot(t testing.TB, e *Engine, key string) (s *shard, h uint64, slot uint32) {
	t.Helper()
	s, h = e.shardFor(key)
	s.mu.Lock()
	slot, ok := s.findLocked(key, h)
	if !ok {
		s.mu.Unlock()
		t.Fatalf("%s not found", key)
	}
	return s, h, slot
}
