package bench

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/maypok86/otter/v2"
	"github.com/tidekv/tide/engine"
)

// readsThenBurst fills a cache of n entries, reads the first half of the
// keys rounds times each (reads only), then inserts n/2 new keys (each
// read once after its insert), and returns how many of the read keys are
// still cached. A policy that sees the reads keeps them all (they are the
// most recent and the most frequent); one that dropped them evicts by the
// writes alone.
func readsThenBurst(n, rounds int, set func(k string), get func(k string) bool) int {
	key := func(i int) string { return fmt.Sprintf("%08d", i) }
	for i := range n {
		set(key(i))
	}
	for range rounds {
		for i := range n / 2 {
			get(key(i))
		}
	}
	for i := n; i < n+n/2; i++ {
		set(key(i))
		get(key(i))
	}
	kept := 0
	for i := range n / 2 {
		if get(key(i)) {
			kept++
		}
	}
	return kept
}

// On one core, in a long run of reads with no writes, every read still
// reaches tide's policy: keys read 50 times each all survive a burst of
// inserts that evicts half the cache. otter, measured beside it, is only
// logged: with its default executor (a new goroutine, which cannot run
// while the reader holds the only P) its read buffers stay full and it
// drops the reads; with a synchronous executor it keeps them.
func TestReadsReachThePolicyOnOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n, rounds = 10000, 50
	e, err := engine.New(engine.Config{MaxBytes: n * (8 + 8 + engine.EntryOverhead), Policy: RecommendedPolicy, ExpiryInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	val := make([]byte, 8)
	kept := readsThenBurst(n, rounds, func(k string) {
		if _, err := e.Set(k, val); err != nil {
			t.Fatal(err)
		}
	}, func(k string) bool { _, ok := e.AppendGet(val[:0], k); return ok })
	if kept != n/2 {
		t.Errorf("tide (%s): %d of the %d keys read %d times each survive the burst, want all", RecommendedPolicy.Name, kept, n/2, rounds)
	}
	for _, sync := range []bool{false, true} {
		o := &otter.Options[string, int]{MaximumSize: n}
		if sync {
			o.Executor = func(fn func()) { fn() }
		}
		c := otter.Must(o)
		kept := readsThenBurst(n, rounds, func(k string) { c.Set(k, 0); c.CleanUp() }, func(k string) bool { _, ok := c.GetIfPresent(k); return ok })
		c.StopAllGoroutines()
		t.Logf("otter (synchronous executor %v): %d of the %d keys survive", sync, kept, n/2)
	}
}
