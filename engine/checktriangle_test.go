package engine

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/internal/table"
)

// Check verifies what a lock-free read relies on: the table word names
// the offset of the key's record, the record names its slot, the slot's
// ents word names the same offset, the published arrays are the shard's,
// and the header length a record's flags imply (the deadline word) is the
// one the arena accounts. Each case breaks one of them, as a writer that
// forgot a step would, and Check must report it.
func TestCheckReportsABrokenRecordTriangle(t *testing.T) {
	const key = "a key with a TTL"
	tests := []struct {
		name    string
		corrupt func(s *shard, slot, oldOff, off uint32)
		want    string
		// unlocked: corrupt after the lock is released (Unlock would
		// publish the arrays again).
		unlocked bool
	}{
		{"table word names the record a move left", func(s *shard, slot, oldOff, off uint32) {
			s.tab.Replace(table.Tag(s.hash([]byte(key))), recRef(off), recRef(oldOff))
		}, "table names offset", false},
		{"ents names the record a move left", func(s *shard, slot, oldOff, off uint32) {
			s.ents.set(slot, oldOff+1)
		}, "table names offset", false},
		{"record names another slot", func(s *shard, slot, oldOff, off uint32) {
			p := hdr64(s.arena, off+hdrMeta)
			atomic.StoreUint64(p, atomic.LoadUint64(p)+1)
		}, "slot", false},
		{"record lost its deadline word's flag", func(s *shard, slot, oldOff, off uint32) {
			en := s.at(slot)
			en.setFlags(en.flags() &^ flagDeadline)
		}, "not its key", false},
		{"published arrays are stale", func(s *shard, slot, oldOff, off uint32) {
			s.pub.Store(&storeView{s.tab.Words(), append([]byte(nil), s.arena...)})
		}, "published", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(Config{Shards: 1, ExpiryInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for _, k := range []string{"x", "y", key, "z"} {
				if _, err := e.Set(k, []byte("value of "+k)); err != nil {
					t.Fatal(err)
				}
			}
			s, h := e.shardFor(key)
			s.mu.RLock()
			slot, _ := s.findLocked(key, h)
			oldOff := s.at(slot).off
			s.mu.RUnlock()
			// The TTL moves the record to one with a deadline word.
			if _, err := e.Expire(key, time.Hour, ExpireConditionAlways); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, e)
			s.mu.Lock()
			off := s.at(slot).off
			if off == oldOff {
				s.mu.Unlock()
				t.Fatal("the TTL did not move the record")
			}
			if !tt.unlocked {
				tt.corrupt(s, slot, oldOff, off)
			}
			s.mu.Unlock()
			if tt.unlocked {
				tt.corrupt(s, slot, oldOff, off)
			}
			err = e.Check()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// TestCheckCatchesAPolicyOutOfStep guards Check's policy invariants: a
// policy that lost an entry the shard still marks tracked, or whose own
// state is inconsistent, fails the engine's Check.
func TestCheckCatchesAPolicyOutOfStep(t *testing.T) {
	for _, spec := range []evict.Spec{evict.TinyLFU, evict.Adaptive, evict.S3FIFO, evict.AllKeysLRU} {
		t.Run(spec.Name, func(t *testing.T) {
			e, err := New(Config{Shards: 1, MaxBytes: 1 << 20, Policy: spec, ExpiryInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for i := range 20 {
				if _, err := e.Set(fmt.Sprintf("k%d", i), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Check(); err != nil {
				t.Fatalf("before: %v", err)
			}
			s, _, slot := lockSlot(t, e, "k3")
			s.pol.Remove(evict.Handle(slot)) // the shard still marks it tracked
			s.mu.Unlock()
			if err := e.Check(); err == nil || !strings.Contains(err.Error(), "the policy tracks 19 entries, the shard 20") {
				t.Fatalf("after the policy lost a tracked entry: Check = %v, want the policy's count against the shard's", err)
			}
		})
	}
}
