package engine

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tidekv/tide/internal/table"
)

// tagTwins returns up to want pairs of distinct keys whose hashes under
// e's seed have the same table tag (so they share every probe sequence).
func tagTwins(e *Engine, want int) [][2]string {
	seen := map[uint32]string{}
	var pairs [][2]string
	for i := 0; len(pairs) < want && i < 1<<20; i++ {
		k := fmt.Sprintf("twin-%d", i)
		tag := table.Tag(e.seed.keyHash(k))
		if o, ok := seen[tag]; ok {
			pairs = append(pairs, [2]string{o, k})
			delete(seen, tag)
			continue
		}
		seen[tag] = k
	}
	return pairs
}

// TestPeekFindsTagTwinsWhileTheTableResizes guards the lock-free probe
// (peek's inline loop over a possibly stale table): keys whose tags are
// equal are told apart by their keys, a present twin is always found
// with its own value and an absent one never takes its twin's, while a
// writer grows the table to thousands of words, shrinks it back, empties
// it and rebuilds the arena under the readers.
func TestPeekFindsTagTwinsWhileTheTableResizes(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	if _, ok := e.Get("absent"); ok {
		t.Fatal("an empty engine hit")
	}
	pairs := tagTwins(e, 4)
	if len(pairs) < 2 {
		t.Fatal("no keys with equal tags found")
	}
	val := func(k string) string { return "value of " + k }
	// Both twins of the first pair stay present (one of them lies past
	// the other in every probe); the second twin of each other pair
	// comes and goes.
	stable := pairs[:1]
	pairs = pairs[1:]
	for _, p := range append(stable, pairs...) {
		if _, err := e.Set(p[0], []byte(val(p[0]))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Set(stable[0][1], []byte(val(stable[0][1]))); err != nil {
		t.Fatal(err)
	}
	rounds := 30
	if raceEnabled {
		rounds = 6
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := &e.shards[0]
		for r := range rounds {
			for i := range 3000 {
				if _, err := e.Set(fmt.Sprintf("churn-%d", i), []byte("c")); err != nil {
					t.Error(err)
					return
				}
				if i%500 == 0 {
					for _, p := range pairs {
						if r%2 == 0 {
							e.Set(p[1], []byte(val(p[1])))
						} else {
							e.Delete(p[1])
						}
					}
				}
			}
			s.mu.Lock()
			s.rebuildLocked(len(s.arena)-s.garbage+512, s.openLocked())
			s.mu.Unlock()
			for i := range 3000 {
				e.Delete(fmt.Sprintf("churn-%d", i))
			}
		}
		close(stop)
	}()
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				for _, k := range stable[0] {
					if got, ok := e.AppendGet(buf[:0], k); !ok || string(got) != val(k) {
						errs <- fmt.Errorf("%s = %q %v, want %q", k, got, ok, val(k))
						return
					}
					if !e.View(k, func(v []byte) {}) {
						errs <- fmt.Errorf("View missed %s", k)
						return
					}
				}
				for _, p := range pairs {
					if got, ok := e.AppendGet(buf[:0], p[0]); !ok || string(got) != val(p[0]) {
						errs <- fmt.Errorf("%s = %q %v, want %q", p[0], got, ok, val(p[0]))
						return
					}
					var bad error
					e.View(p[1], func(v []byte) {
						if string(v) != val(p[1]) {
							bad = fmt.Errorf("%s read %q", p[1], v)
						}
					})
					if it, ok := e.GetItem(p[1]); ok && string(it.Value) != val(p[1]) {
						bad = fmt.Errorf("%s read %q", p[1], it.Value)
					}
					if bad != nil {
						errs <- bad
						return
					}
				}
			}
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	mustCheck(t, e)
	for _, p := range append(stable, pairs...) {
		e.Delete(p[0])
		e.Delete(p[1])
	}
	if e.shards[0].tab.Cap() != 0 {
		t.Fatalf("an emptied table keeps %d words", e.shards[0].tab.Cap())
	}
	for _, p := range pairs {
		if _, ok := e.Get(p[0]); ok {
			t.Fatalf("%s found in an empty table", p[0])
		}
		if e.View(p[1], func([]byte) {}) {
			t.Fatalf("%s viewed in an empty table", p[1])
		}
	}
}
