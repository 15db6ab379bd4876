package engine

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
)

// kickRewriteLoop makes the rewrite goroutine check its thresholds and
// returns once that check (and any rewrite it started) is done: the
// channel holds one token, so the third send completes only after the
// goroutine took the second, that is after it finished with the first.
func kickRewriteLoop(e *Engine) {
	for range 3 {
		e.dur.kick <- struct{}{}
	}
}

// TestRewriteThresholdDoesNotOverflow: RewritePercent is "rewrite when the
// incremental log exceeds this percentage of the base". A huge percentage
// (a way to say "practically never") must not overflow into "always":
// base × percent wrapped, and the goroutine rewrote at every check.
func TestRewriteThresholdDoesNotOverflow(t *testing.T) {
	tests := []struct {
		name    string
		percent int
		want    uint64 // automatic rewrites after one check
	}{
		{"100%", 100, 1},
		{"MaxInt32%", math.MaxInt32, 0},
		{"MaxInt%", math.MaxInt, 0},
		{"MaxInt/3%", math.MaxInt / 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(t0)
			cfg := Config{Durability: Durability{RewritePercent: tt.percent, RewriteMinSize: 1, RewriteCheckInterval: time.Hour}}
			e := mustOpenDurable(t, nil, t.TempDir(), clk, cfg)
			defer e.Close()
			for i := range 100 {
				if _, err := e.Set(fmt.Sprint("k", i), make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Rewrite(); err != nil { // a base of about 12 KB
				t.Fatal(err)
			}
			for i := range 200 { // an incremental log of about 24 KB
				if _, err := e.Set(fmt.Sprint("k", i%100), make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			}
			kickRewriteLoop(e)
			st := e.LogStats()
			if got := st.Rewrites - 1; got != tt.want || st.RewriteErr != nil {
				t.Errorf("base %d B, incr %d B, RewritePercent %d: got %d automatic rewrites (err %v), want %d",
					st.BaseBytes, st.IncrBytes, tt.percent, got, st.RewriteErr, tt.want)
			}
		})
	}
}
