package engine

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestReview8RememberedSlotSurvivesShrinkAndRebuild guards the remembered
// slot word across the paths that replace the slot array or move every
// record after removals (maybeShrinkLocked: an emptied shard drops its
// arrays, a large arena more than half garbage is rebuilt), reached by
// Delete, by the expiry cycle and by GetAndDelete: each sequence first
// makes a writer remember a slot (an overwrite of the same length, in
// place), then shrinks, then overwrites and reads the same key and others;
// Check must pass and every key read back what was written last.
func TestReview8RememberedSlotSurvivesShrinkAndRebuild(t *testing.T) {
	key := func(i int) string { return fmt.Sprintf("key-%05d", i) }
	val := func(i, gen, n int) []byte { return bytes.Repeat([]byte{byte(i*7 + gen)}, n) }
	cases := []struct {
		name   string
		keys   int
		vlen   int
		ttl    time.Duration
		remove func(e *Engine, keep func(i int) bool, n int)
		keep   func(i int) bool
	}{
		{"emptied by Delete, over 1024 slots", 1100, 16, NoTTL, func(e *Engine, keep func(int) bool, n int) {
			for i := range n {
				if !keep(i) {
					e.Delete(key(i))
				}
			}
		}, func(int) bool { return false }},
		{"emptied by the expiry cycle, over 64 KiB", 300, 300, time.Second, nil, func(int) bool { return false }},
		{"large arena more than half garbage, by GetAndDelete", 300, 400, NoTTL, func(e *Engine, keep func(int) bool, n int) {
			for i := range n {
				if !keep(i) {
					e.GetAndDelete(key(i))
				}
			}
		}, func(i int) bool { return i%5 == 0 }},
		{"large arena more than half garbage, by the expiry cycle", 300, 400, time.Second, nil, func(i int) bool { return i%5 == 0 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, clk := newTest(t, Config{Shards: 1, ExpiryBudget: expiryBudget(100000)})
			want := map[string][]byte{}
			for i := range c.keys {
				ttl := c.ttl
				if c.keep(i) {
					ttl = NoTTL
				}
				v := val(i, 0, c.vlen)
				if _, _, err := e.SetWith(key(i), v, SetOptions{TTL: ttl}); err != nil {
					t.Fatal(err)
				}
				want[key(i)] = v
			}
			// Remember a slot: an in-place overwrite of the same length
			// of a key that goes, then of one that stays.
			for _, i := range []int{3, 5} {
				v := val(i, 1, c.vlen)
				if _, err := e.Set(key(i), v); err != nil {
					t.Fatal(err)
				}
				want[key(i)] = v
			}
			if c.keep(5) {
				mustCheck(t, e)
			}
			if c.remove != nil {
				c.remove(e, c.keep, c.keys)
			} else {
				clk.Advance(2 * c.ttl)
				for {
					if _, more := e.RunExpiryCycle(); !more {
						break
					}
				}
			}
			for i := range c.keys {
				if !c.keep(i) {
					delete(want, key(i))
				}
			}
			mustCheck(t, e)
			// Write again: the kept keys in place (same length), the
			// removed ones anew, and the remembered key.
			for _, i := range []int{5, 3, 0, 10, 7} {
				v := val(i, 2, c.vlen)
				if _, err := e.Set(key(i), v); err != nil {
					t.Fatal(err)
				}
				want[key(i)] = v
				mustCheck(t, e)
			}
			for i := range c.keys {
				got, ok := e.Get(key(i))
				w, wok := want[key(i)]
				if ok != wok || !bytes.Equal(got, w) {
					t.Fatalf("Get(%s) = %d bytes, %v; want %d bytes, %v", key(i), len(got), ok, len(w), wok)
				}
			}
			if n := e.Len(); n != len(want) {
				t.Fatalf("Len = %d, want %d", n, len(want))
			}
		})
	}
}
