package sim

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// seedHits is a cache whose hit ratio its seed fixes: of every 100
// accesses, the first hits of them hit.
type seedHits struct{ hits, n int }

func (c *seedHits) Access(uint64) bool {
	hit := c.n%100 < c.hits
	c.n++
	return hit
}
func (c *seedHits) Close() {}

// seeded is a contender of runs runs whose run r hits ratio(r) percent.
func seeded(name string, runs int, ratio func(r uint64) int) Contender {
	return Contender{Name: name, Runs: runs, NewSeeded: func(_ int, seed uint64) Cache {
		return &seedHits{hits: ratio(seed)}
	}}
}

// TestRunSEIsTheRunsStandardError checks RunSE's means and standard errors
// against figures worked out by hand: the sample standard deviation of
// the runs' hit ratios over √runs, NaN for a single run, 0 for runs that
// agree.
func TestRunSEIsTheRunsStandardError(t *testing.T) {
	keys := make([]uint64, 1000)
	cs := []Contender{
		seeded("spread", 4, func(r uint64) int { return 10 * int(r) }), // 0, 10, 20, 30
		seeded("same", 5, func(uint64) int { return 40 }),
		seeded("once", 1, func(uint64) int { return 25 }),
	}
	mean, se := RunSE(keys, []int{10, 20}, cs, 3)
	want := []struct{ mean, se float64 }{
		{15, math.Sqrt(500.0/3) / 2}, // squared deviations 225+25+25+225 over 3, then over √4
		{40, 0},
		{25, math.NaN()},
	}
	for i := range mean {
		for j, w := range want {
			if got := mean[i][j]; math.Abs(got-w.mean) > 1e-9 {
				t.Errorf("cap %d %s: mean got %v, want %v", i, cs[j].Name, got, w.mean)
			}
			got := se[i][j]
			if math.IsNaN(w.se) != math.IsNaN(got) || (!math.IsNaN(w.se) && math.Abs(got-w.se) > 1e-9) {
				t.Errorf("cap %d %s: standard error got %v, want %v", i, cs[j].Name, got, w.se)
			}
		}
	}
	if got := Run(keys, []int{10}, cs, 2); got[0][0] != mean[0][0] {
		t.Errorf("Run's mean got %v, RunSE's %v", got[0][0], mean[0][0])
	}
}

// TestReportGivesGapsWithTheirStandardError checks that the report's
// differences carry the standard error of both columns (√(se₁² + se₂²)),
// that a deterministic column (tinylfu, s3fifo) counts as exact, and that
// a column whose spread is unknown prints the difference alone.
func TestReportGivesGapsWithTheirStandardError(t *testing.T) {
	cs := []Contender{{Name: ColAdaptive}, {Name: ColEngine}, {Name: ColOtter}, {Name: ColTinyLFU}, {Name: ColS3FIFO}}
	tab := &Table{
		Trace:      &Trace{Name: "t", Title: "t", Caps: []int{100}},
		Contenders: cs,
		// adaptive 40, engine 41 (a gap of +1 > 0.5), otter 41 (adaptive
		// below it), best2 41 (adaptive 1 below).
		Ratios: [][]float64{{40, 41, 41, 41, 30}},
		SE:     [][]float64{{0.3, 0.4, math.NaN(), math.NaN(), math.NaN()}},
	}
	var b bytes.Buffer
	WriteMarkdown(&b, []*Table{tab}, nil, "test", "no time")
	out := b.String()
	for _, want := range []string{
		"engine +1.00 ± 0.50",                     // √(0.3² + 0.4²)
		"below best2 by 1.00 ± 0.30",              // tinylfu exact: adaptive's own
		"below otter by 1.00;",                    // otter's spread unknown: no ±
		"| -1.00 | -1.00 ± 0.30 | +1.00 ± 0.50 |", // Δ otter, Δ best2, eng − pol
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
