package evict

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestReviewEvictLRUEntriesOlderThanHalfTheClock guards AllKeysLRU's
// promise to evict the least recently used entry when an entry goes
// unread and unwritten for 2³¹ ticks of its 32-bit clock or more: a
// shard under its cap for that many writes of other keys (a few minutes
// at a million writes a second), then filling. Its stamp, compared with
// wrap-around arithmetic, looked newer than every recent entry's, so the
// recent entries were evicted first and the ancient one stayed. The
// clock is advanced as writes of other keys advance it (each one tick),
// jumping over stretches in which nothing but the clock changes but
// taking the tick at each multiple of 2²⁸, where the policy may do work.
func TestReviewEvictLRUEntriesOlderThanHalfTheClock(t *testing.T) {
	for _, gap := range []uint64{1 << 20, 1<<31 - 1, 1 << 31, 1<<31 + 10, 3 << 30, 1<<32 - 5, 1 << 32, 5 << 31, 1 << 34} {
		p := newLRU()
		p.Add(0, Entry{Size: 1}) // written once, never read again
		p.Add(1, Entry{Size: 1})
		p.Access(1)
		// gap writes of other keys: an Add and a Remove each, but for
		// the stretches that only move the clock.
		for done := uint64(0); done < gap; {
			step := uint64(1)
			if r := uint64(p.clock.Load()) % (1 << 28); r != 0 {
				step = 1<<28 - r + 1
			}
			if step = min(step, gap-done); step > 1 {
				p.clock.Add(uint32(step - 1))
				done += step - 1
			}
			p.Add(2, Entry{Size: 1})
			p.Remove(2)
			done++
		}
		p.Add(3, Entry{Size: 1})
		p.Add(4, Entry{Size: 1})
		p.Access(4)
		var got []Handle
		for range 4 {
			h, ok := p.Victim(0)
			if !ok {
				t.Fatalf("gap %d: Victim = _, false with entries left", gap)
			}
			got = append(got, h)
			p.Remove(h)
			if err := p.check(); err != nil {
				t.Fatalf("gap %d: %v", gap, err)
			}
		}
		// Entries more than 2³⁰ ticks old keep no order among themselves
		// (see AllKeysLRU): 0 and 1 may leave in either order then.
		want := []Handle{0, 1, 3, 4}
		if gap > 1<<30 && got[0] == 1 {
			want = []Handle{1, 0, 3, 4}
		}
		if !slices.Equal(got, want) {
			t.Errorf("gap %d: eviction order %v, want %v", gap, got, want)
		}
	}
}

// TestReviewEvictLRUAgainstRecency checks AllKeysLRU's exactness against
// a model of recency: Victim returns an entry last used (added, updated
// or read) in the earliest interval between two ticks (a write or a
// Victim) of any tracked entry, as its doc promises (ties only between
// entries used between the same two ticks). Handles are reused, read
// after removal, added twice, and Victim is called without removing.
func TestReviewEvictLRUAgainstRecency(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := newLRU()
		ticks := 0
		used := map[Handle]int{} // tracked handle → ticks before its last use
		handle := rapid.Custom(func(t *rapid.T) Handle { return Handle(rapid.IntRange(0, 300).Draw(t, "h")) })
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				p.Add(h, Entry{Size: 1})
				used[h] = ticks
				ticks++
			},
			"update": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				p.Update(h, Entry{Size: 1})
				used[h] = ticks
				ticks++
			},
			"access": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				p.Access(h)
				if _, ok := used[h]; ok {
					used[h] = ticks
				}
			},
			"remove": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				p.Remove(h)
				delete(used, h)
			},
			"victim": func(t *rapid.T) {
				h, ok := p.Victim(0)
				ticks++
				if ok != (len(used) > 0) {
					t.Fatalf("Victim ok = %v with %d tracked", ok, len(used))
				}
				if !ok {
					return
				}
				e, tracked := used[h]
				if !tracked {
					t.Fatalf("Victim = %d, not tracked", h)
				}
				for x, ex := range used {
					if ex < e {
						t.Fatalf("Victim = %d last used after %d ticks, but %d was last used after %d", h, e, x, ex)
					}
				}
				if rapid.Bool().Draw(t, "evict") {
					p.Remove(h)
					delete(used, h)
				}
			},
			"": func(t *rapid.T) {
				if err := p.check(); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}
