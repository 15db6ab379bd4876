package engine

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tidekv/tide/clock"
)

// TestDurableCloseDuringWritesAndRewriteLosesNothingAcknowledged closes
// the engine while writers and rewrites run: every write acknowledged
// before Close returned must be in the reopened engine with its version,
// writes refused by the closing engine must be ErrClosed, and a rewrite
// racing Close must never commit a base missing entries.
func TestDurableCloseDuringWritesAndRewriteLosesNothingAcknowledged(t *testing.T) {
	for round := range 5 {
		clk := clock.NewManual(t0)
		dir := t.TempDir()
		cfg := Config{Durability: Durability{Sync: SyncNo}}
		e := mustOpenDurable(t, nil, dir, clk, cfg)
		for i := range 2000 {
			e.Set(fmt.Sprint("seed", i), []byte("x"))
		}
		var wg sync.WaitGroup
		acked := make([]map[string]uint64, 4)
		for w := range acked {
			acked[w] = map[string]uint64{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					k := fmt.Sprintf("w%d/%d", w, i%50)
					v, err := e.Set(k, []byte(fmt.Sprint(i)))
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("Set: %v", err)
						return
					}
					acked[w][k] = v
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := e.Rewrite()
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil && !errors.Is(err, ErrRewriteBusy) {
					t.Errorf("Rewrite: %v", err)
					return
				}
			}
		}()
		for e.LogStats().Rewrites < 2 {
			// let both run a while
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		e2 := mustOpenDurable(t, nil, dir, clk, cfg)
		got := dump(e2)
		for i := range 2000 {
			if _, ok := got[fmt.Sprint("seed", i)]; !ok {
				t.Fatalf("round %d: seed%d lost", round, i)
			}
		}
		for _, m := range acked {
			for k, v := range m {
				if got[k].Version != v {
					t.Fatalf("round %d: %s: version %d, acknowledged %d", round, k, got[k].Version, v)
				}
			}
		}
		e2.Close()
	}
}
