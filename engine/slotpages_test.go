package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
)

// TestSlotPagesSurviveShrinkRegrowAndRebuild guards the paged slot array
// in a shard that fills up to, just past and well past a page boundary:
// removals that free slots on every page, a rebuild (which builds its
// array with zeroed), reuse of the freed slots, an emptied shard (whose
// array is dropped when it spans more than a page) and a refill; the
// policy's handles are the slots. Every key reads back its value and
// Check holds after each step; a durable engine recovers the same
// entries.
func TestSlotPagesSurviveShrinkRegrowAndRebuild(t *testing.T) {
	for _, n := range []int{slotPage - 1, slotPage, slotPage + 1, 2*slotPage + 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(t0)
			cfg := Config{Shards: 1, MaxBytes: 1 << 30, Policy: evict.TinyLFU, ExpiryInterval: -1}
			e := mustOpenDurable(t, nil, dir, clk, cfg)
			defer func() { e.Close() }()
			s := &e.shards[0]
			want := map[string]string{}
			set := func(k, v string, ttl time.Duration) {
				t.Helper()
				var err error
				if ttl > 0 {
					_, err = e.SetTTL(k, []byte(v), ttl)
				} else {
					_, err = e.Set(k, []byte(v))
				}
				if err != nil {
					t.Fatal(err)
				}
				want[k] = v
			}
			verify := func(what string) {
				t.Helper()
				mustCheck(t, e)
				for k, v := range want {
					if got, ok := e.Get(k); !ok || string(got) != v {
						t.Fatalf("%s: %s = %q %v, want %q", what, k, got, ok, v)
					}
				}
				if got := e.Len(); got != len(want) {
					t.Fatalf("%s: %d entries, want %d", what, got, len(want))
				}
			}
			rebuild := func() {
				s.mu.Lock()
				s.rebuildLocked(len(s.arena)-s.garbage+512, s.openLocked())
				s.mu.Unlock()
			}
			for i := range n {
				set(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), time.Duration(i%2)*time.Hour)
			}
			verify("filled")
			for i := 0; i < n; i += 3 {
				e.Delete(fmt.Sprintf("k%d", i))
				delete(want, fmt.Sprintf("k%d", i))
			}
			verify("a third removed")
			rebuild()
			verify("rebuilt")
			for i := 0; i < n; i += 3 {
				set(fmt.Sprintf("r%d", i), fmt.Sprintf("w%d", i), 0)
			}
			verify("freed slots reused")
			if s.ents.len() != n {
				t.Fatalf("%d slots for %d entries after reusing the free ones, want %d", s.ents.len(), len(want), n)
			}
			for k := range want {
				e.Delete(k)
				delete(want, k)
			}
			verify("emptied")
			if n > slotPage && s.ents.len() != 0 {
				t.Fatalf("an emptied shard of %d slots keeps them", s.ents.len())
			}
			for i := range n + 5 {
				set(fmt.Sprintf("n%d", i), fmt.Sprintf("x%d", i), time.Duration(i%3)*time.Hour)
			}
			verify("refilled")
			rebuild()
			verify("refilled and rebuilt")
			e.Close()
			e = mustOpenDurable(t, nil, dir, clk, cfg)
			verify("recovered")
		})
	}
}

// TestAdaptiveShardFillsEmptiesAndRefills drives an engine under Adaptive
// (whose shards demote their protected entries when they first fill)
// through a fill with hits, evictions, an update of every entry, removal
// of everything and a refill past the cap again, with entries larger than
// the shard's share now and then; the engine's Check (its accounting of
// tracked bytes against the budget, slots, table) holds after every phase
// and something was evicted in each round.
func TestAdaptiveShardFillsEmptiesAndRefills(t *testing.T) {
	const maxBytes = 1 << 20
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: maxBytes, Policy: evict.Adaptive})
	val := func(i int) []byte {
		if i%97 == 0 {
			return make([]byte, 64<<10+i) // a size kept in the policy's big map
		}
		return make([]byte, 100+i%50)
	}
	for round := range 3 {
		for i := range 12000 {
			k := fmt.Sprintf("k%d", i)
			if _, err := e.Set(k, val(i+round)); err != nil {
				t.Fatalf("round %d, set %d: %v", round, i, err)
			}
			if i%3 == 0 {
				e.Get(fmt.Sprintf("k%d", i/2))
			}
			if i%4000 == 0 {
				mustCheck(t, e)
			}
		}
		mustCheck(t, e)
		if st := e.Stats(); st.Evicted == 0 {
			t.Fatalf("round %d: nothing evicted", round)
		}
		var keys []string
		for k := range e.Items() {
			keys = append(keys, k)
		}
		for _, k := range keys {
			if _, err := e.Set(k, []byte("short")); err != nil {
				t.Fatal(err)
			}
		}
		mustCheck(t, e)
		for _, k := range keys {
			e.Delete(k)
		}
		mustCheck(t, e)
		if n := e.Len(); n != 0 {
			t.Fatalf("round %d: %d entries after deleting all", round, n)
		}
	}
}
