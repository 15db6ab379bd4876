package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/tidekv/tide/bench"
	"github.com/tidekv/tide/bench/internal/chart"
)

// Target ratios of the speed charts (throughput relative to the group's
// reference peer): tide's zero-copy View at least as fast, its copying Get
// within 10%.
const (
	targetView = 1.0
	targetGet  = 0.9
)

// chartName is the file name of the chart of one group at one -cpu value.
func chartName(g group, cpu int) string { return fmt.Sprintf("speed-%s-cpu%d.svg", g.name, cpu) }

// chartLink is how the markdown report refers to a chart: relative to the
// report's directory when it is written to a file.
func chartLink(o options, name string) string {
	p := filepath.Join(o.charts, name)
	if o.md != "" {
		if r, err := filepath.Rel(filepath.Dir(o.md), p); err == nil {
			p = r
		}
	}
	return filepath.ToSlash(p)
}

// chartSeries is what one chart plots: for every mix (values[mix]) and
// every column but the reference (the group's first, series[i] names
// column i+1), the median throughput relative to the reference at the same
// mix, reference ns/op ÷ column ns/op (wall time); NaN where the column or
// the reference has no figure (a failed cell, a read path the cache lacks).
// A column whose cache lacks its read path is named "… (n/a)", as in the
// tables.
func chartSeries(g group, cpu int, st map[key]stat) (series []string, values [][]float64) {
	ref := g.cols[0]
	values = make([][]float64, len(bench.Mixes))
	measured := make([]bool, len(g.cols)-1) // a figure at some mix
	lacking := make([]bool, len(g.cols)-1)  // n/a at some mix
	for mi, m := range bench.Mixes {
		base, baseOK := st[key{ref.cache, ref.path.String(), m.Name, cpu}]
		for ci, c := range g.cols[1:] {
			v := math.NaN()
			s, ok := st[key{c.cache, c.path.String(), m.Name, cpu}]
			measured[ci] = measured[ci] || ok && !s.na
			lacking[ci] = lacking[ci] || ok && s.na
			if ok && !s.na && baseOK && !base.na {
				if r := ratio(base.ns, s.ns); r > 0 {
					v = r
				}
			}
			values[mi] = append(values[mi], v)
		}
	}
	for ci, c := range g.cols[1:] {
		name := c.label
		if lacking[ci] && !measured[ci] {
			name += " (n/a)"
		}
		series = append(series, name)
	}
	return series, values
}

// drawChart is the chart of one group at one -cpu value.
func drawChart(o options, g group, cpu int, st map[key]stat) []byte {
	series, values := chartSeries(g, cpu, st)
	mixes := make([]string, len(bench.Mixes))
	for i, m := range bench.Mixes {
		mixes[i] = mixLabel(m.Name)
	}
	ref := g.cols[0].label
	title := fmt.Sprintf("%s, -cpu %d: throughput relative to %s (median of %d rounds)", g.name, cpu, ref, o.rounds)
	ylabel := fmt.Sprintf("%s ns/op ÷ ns/op, wall time (≥ 1 is faster)", ref)
	return chart.GroupedBars(title, ylabel, mixes, series, values,
		chart.Ref{Value: targetView, Label: fmt.Sprintf("%.1f× (View target)", targetView)},
		chart.Ref{Value: targetGet, Label: fmt.Sprintf("%.1f× (Get target)", targetGet), Color: "#888"})
}

// writeCharts writes the chart of every group at every -cpu value into
// o.charts.
func writeCharts(o options, cells []cell) error {
	if err := os.MkdirAll(o.charts, 0o755); err != nil {
		return err
	}
	st := aggregate(cells)
	for _, g := range o.groups {
		for _, cpu := range o.cpus {
			if err := chart.WriteFile(filepath.Join(o.charts, chartName(g, cpu)), drawChart(o, g, cpu, st)); err != nil {
				return err
			}
		}
	}
	return nil
}
