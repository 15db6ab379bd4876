package engine

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
)

// lockProbeClock is a manual clock that records every reading taken while
// the probed shard's lock is free. A reading taken outside the lock the
// operation then decides under is the window in which another writer can
// hold the lock while the deadline passes, a reader can report the key
// missing, and the operation, deciding with the stale time, brings the key
// back. To take such a reading, the probe locks and unlocks the shard, as
// a writer would between the reading and the decision: an optimistic
// reader (a seqlock reader, which holds no lock) must notice that writer
// when it validates, discard the reading and read again.
type lockProbeClock struct {
	*clock.Manual
	s           *shard
	armed       atomic.Bool
	outside     atomic.Int32
	lastOutside atomic.Bool // the latest reading was taken outside the lock
}

func (c *lockProbeClock) Now() int64 {
	if c.armed.Load() {
		free := c.s.mu.TryLock()
		if free {
			c.s.mu.Unlock()
			c.outside.Add(1)
		}
		c.lastOutside.Store(free)
	}
	return c.Manual.Now()
}

// TestEveryOpReadsClockUnderShardLock guards the promise that once a key is
// reported missing it stays missing: every operation that decides on a
// deadline (reads, writes, TTL changes, counters, transactions, stats) reads
// the clock while it holds the lock it decides under, so no time can pass
// between the reading and the decision. The optimistic reads (Get,
// AppendGet, View, GetItem, TTL) hold no lock: for them, reading under the lock means
// between the first read of the shard's sequence count and its
// validation; they may take readings outside the lock, but must discard
// every one of them (the probe's lock makes the validation fail), so
// their last reading, the one they decide on, is taken under the lock.
func TestEveryOpReadsClockUnderShardLock(t *testing.T) {
	ops := []struct {
		name string
		op   func(e *Engine) error
	}{
		{"Get", func(e *Engine) error { e.Get("k"); return nil }},
		{"AppendGet", func(e *Engine) error { e.AppendGet(nil, "k"); return nil }},
		{"View", func(e *Engine) error { e.View("k", func([]byte) {}); return nil }},
		{"GetItem", func(e *Engine) error { e.GetItem("k"); return nil }},
		{"TTL", func(e *Engine) error { e.TTL("k"); return nil }},
		{"Set", func(e *Engine) error { _, err := e.Set("k", []byte("v")); return err }},
		{"SetTTL", func(e *Engine) error { _, err := e.SetTTL("k", []byte("v"), time.Hour); return err }},
		{"SetWith/KeepTTL", func(e *Engine) error {
			_, _, err := e.SetWith("k", []byte("v"), SetOptions{KeepTTL: true})
			return err
		}},
		{"SetWith/TTLOnCreate", func(e *Engine) error {
			_, _, err := e.SetWith("k", []byte("v"), SetOptions{TTL: time.Hour, TTLOnCreate: true})
			return err
		}},
		{"CompareAndSwap", func(e *Engine) error { _, _, err := e.CompareAndSwap("k", 1, []byte("v")); return err }},
		{"Delete", func(e *Engine) error { e.Delete("k"); return nil }},
		{"CompareAndDelete", func(e *Engine) error { e.CompareAndDelete("k", 1); return nil }},
		{"GetAndDelete", func(e *Engine) error { e.GetAndDelete("k"); return nil }},
		{"Expire", func(e *Engine) error { _, err := e.Expire("k", time.Hour, ExpireConditionAlways); return err }},
		{"ExpireAt", func(e *Engine) error {
			_, err := e.ExpireAt("k", t0.Add(time.Hour), ExpireConditionAlways)
			return err
		}},
		{"Persist", func(e *Engine) error { _, err := e.Persist("k"); return err }},
		{"Pin", func(e *Engine) error { _, err := e.Pin("k", true); return err }},
		{"GetAndExpire", func(e *Engine) error { _, _, err := e.GetAndExpire("k", time.Hour); return err }},
		{"IncrWith", func(e *Engine) error {
			_, err := e.IncrWith("k", 1, IncrOptions{TTL: time.Hour})
			return err
		}},
		{"Commit", func(e *Engine) error {
			_, _, err := e.Commit([]Precondition{{Key: "k", Version: 1}}, []Op{{Key: "k", Value: []byte("2"), TTL: NoTTL}})
			return err
		}},
		{"Items", func(e *Engine) error {
			for range e.Items() {
			}
			return nil
		}},
		{"Stats", func(e *Engine) error { e.Stats(); return nil }},
	}
	optimistic := map[string]bool{"Get": true, "AppendGet": true, "View": true, "GetItem": true, "TTL": true}
	for _, tc := range ops {
		for _, due := range []bool{false, true} {
			t.Run(tc.name+"/due="+strconv.FormatBool(due), func(t *testing.T) {
				clk := &lockProbeClock{Manual: clock.NewManual(t0)}
				e, _ := newTest(t, Config{Shards: 1, Clock: clk})
				clk.s = &e.shards[0]
				if _, err := e.SetTTL("k", []byte("1"), 10*time.Second); err != nil {
					t.Fatal(err)
				}
				if due {
					clk.Advance(10 * time.Second)
				}
				clk.armed.Store(true)
				if err := tc.op(e); err != nil {
					t.Fatal(err)
				}
				clk.armed.Store(false)
				switch n := clk.outside.Load(); {
				case optimistic[tc.name] && clk.lastOutside.Load():
					t.Fatalf("%s decided on a clock reading taken without the shard lock (%d such readings)", tc.name, n)
				case !optimistic[tc.name] && n > 0:
					t.Fatalf("%s read the clock %d time(s) without holding the shard lock", tc.name, n)
				}
			})
		}
	}
}
