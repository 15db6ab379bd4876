package lease_test

import (
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/lease"
)

// A Resource.Do function may read the Resource's Highest (to persist it
// with the write it guards, as the package documentation suggests for a
// Floor): Do holds its mutex while fn runs, and Highest took the same
// mutex, so it deadlocked. It now reads the token fn runs under.
func TestResourceHighestInsideDo(t *testing.T) {
	for _, c := range []struct {
		name  string
		start uint64
		token uint64
	}{
		{"first token", 0, 1},
		{"same token again", 7, 7},
		{"newer token", 7, 9},
	} {
		r := lease.NewResource(c.start)
		done := make(chan uint64, 1)
		go func() {
			var seen uint64
			_ = r.Do(c.token, func() error { seen = r.Highest(); return nil })
			done <- seen
		}()
		select {
		case got := <-done:
			if got != c.token {
				t.Errorf("%s: Highest inside Do(%d) got %d, want %d", c.name, c.token, got, c.token)
			}
		case <-time.After(10 * time.Second): // a watchdog, not a wait: the call returns at once or never
			t.Fatalf("%s: Highest inside Do(%d) deadlocked", c.name, c.token)
		}
	}
}
