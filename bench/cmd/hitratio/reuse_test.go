package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tidekv/tide/bench/sim"
)

const earlier = "# tide hit ratios\n\n" +
	"## Glimpse\n\n`glimpse`, 6015 accesses. Chart: x\n\n" +
	"| capacity | tide adaptive | otter | OPT |\n|---:|---:|---:|---:|\n" +
	"| 250 | 14.86 | **15.10** | 17.71 |\n| 1k | 41.98 | – | 53.15 |\n\n" +
	"## Loop\n\n`loop`, 505500 accesses. Chart: y\n\n" +
	"| capacity | otter | OPT |\n|---:|---:|---:|\n| 1250 | 97.05 | +98.71 |\n"

// -reuse carries a column over only for exactly the rows this run has
// (same capacities, in order) and only when no cell is missing; bold and
// signed cells read as numbers.
func TestReuseCarriesOnlyMatchingCompleteColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "HITRATIO.md")
	if err := os.WriteFile(path, []byte(earlier), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		trace, col string
		caps       []int
		want       []float64 // nil: not carried over
	}{
		{"glimpse", "OPT", []int{250, 1000}, []float64{17.71, 53.15}},
		{"glimpse", "otter", []int{250, 1000}, nil}, // a dash: missing
		{"glimpse", "OPT", []int{250}, nil},         // other rows
		{"glimpse", "OPT", []int{250, 2000}, nil},   // other capacity
		{"glimpse", "theine", []int{250, 1000}, nil},
		{"loop", "OPT", []int{1250}, []float64{98.71}},
		{"loop", "otter", []int{1250}, []float64{97.05}},
		{"sprite", "OPT", []int{100}, nil},
	}
	for _, c := range cases {
		got, ok := r.column(c.trace, c.col, c.caps)
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("column(%s, %s, %v) = %v, %v; want %v", c.trace, c.col, c.caps, got, ok, c.want)
		}
	}
}

// A short trace's seeded columns average enough seeds to cover the
// accesses asked for, up to sim.MaxSeedRuns; a long one keeps -runs.
func TestSeedRunsCoverTheAccessesAskedFor(t *testing.T) {
	for _, c := range []struct {
		runs, minAccesses, n, want int
	}{
		{3, 1_500_000, 6015, 250},  // glimpse
		{3, 1_500_000, 15858, 95},  // multi1
		{3, 1_500_000, 133996, 12}, // sprite
		{3, 1_500_000, 505500, 3},  // loop
		{3, 1_500_000, 3912296, 3}, // p3
		{3, 1_500_000, 1000, sim.MaxSeedRuns},
		{3, 0, 6015, 3},
		{5, 300_000, 0, 5},
	} {
		if got := seedRuns(c.runs, c.minAccesses, c.n); got != c.want {
			t.Errorf("seedRuns(%d, %d, %d) = %d, want %d", c.runs, c.minAccesses, c.n, got, c.want)
		}
	}
}
