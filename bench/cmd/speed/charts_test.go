package main

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestChartSeriesIsMedianThroughputRelativeToReference(t *testing.T) {
	unbounded := groups[1]
	res := func(mix, path string, ns float64) result { return result{Mix: mix, Path: path, NsOp: ns, CPUNsOp: ns} }
	na := func(mix, path string) result { return result{Mix: mix, Path: path, NA: true} }
	goCache := func(cpu, round int, rs ...result) cell {
		return cell{Cache: "go-cache", CPU: cpu, Round: round, Results: rs}
	}
	tide := func(cpu, round int, rs ...result) cell {
		return cell{Cache: "tide", CPU: cpu, Round: round, Results: rs}
	}
	tests := []struct {
		name   string
		cells  []cell
		cpu    int
		series string // the column's series name
		mix    string
		want   float64 // NaN: no bar
	}{
		{"median over an odd number of rounds", []cell{
			goCache(1, 0, res("100-0", "AppendGet", 100)), goCache(1, 1, res("100-0", "AppendGet", 300)), goCache(1, 2, res("100-0", "AppendGet", 200)),
			tide(1, 0, res("100-0", "Get", 400)), tide(1, 1, res("100-0", "Get", 100)), tide(1, 2, res("100-0", "Get", 50)),
		}, 1, "tide Get", "100-0", 2},
		{"median over an even number of rounds", []cell{
			goCache(1, 0, res("50-50", "AppendGet", 100)), goCache(1, 1, res("50-50", "AppendGet", 200)),
			tide(1, 0, res("50-50", "AppendGet", 300)), tide(1, 1, res("50-50", "AppendGet", 100)),
		}, 1, "tide AppendGet", "50-50", 0.75},
		{"slower than the reference is below 1", []cell{
			goCache(2, 0, res("90-10", "AppendGet", 100)), tide(2, 0, res("90-10", "View", 400)),
		}, 2, "tide View", "90-10", 0.25},
		{"another -cpu value is not mixed in", []cell{
			goCache(1, 0, res("75-25", "AppendGet", 100)), tide(1, 0, res("75-25", "Get", 100)),
			goCache(2, 0, res("75-25", "AppendGet", 900)), tide(2, 0, res("75-25", "Get", 1)),
		}, 1, "tide Get", "75-25", 1},
		{"a path the cache lacks has no bar", []cell{
			goCache(1, 0, res("100-0", "AppendGet", 100)), tide(1, 0, na("100-0", "View")),
		}, 1, "tide View (n/a)", "100-0", math.NaN()},
		{"no reference figure, no bar", []cell{
			tide(1, 0, res("100-0", "Get", 100)),
		}, 1, "tide Get", "100-0", math.NaN()},
		{"reference n/a, no bar", []cell{
			goCache(1, 0, na("100-0", "AppendGet")), tide(1, 0, res("100-0", "Get", 100)),
		}, 1, "tide Get", "100-0", math.NaN()},
		{"a mix without a figure has no bar", []cell{
			goCache(1, 0, res("100-0", "AppendGet", 100), res("90-10", "AppendGet", 100)), tide(1, 0, res("100-0", "Get", 100)),
		}, 1, "tide Get", "90-10", math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			series, values := chartSeries(unbounded, tt.cpu, aggregate(tt.cells))
			if len(series) != len(unbounded.cols)-1 || len(values) != 4 {
				t.Fatalf("%d series, %d mixes; want every column but the reference, every mix", len(series), len(values))
			}
			si := slices.Index(series, tt.series)
			if si < 0 {
				t.Fatalf("series %q not in %q", tt.series, series)
			}
			mi := slices.Index([]string{"100-0", "90-10", "75-25", "50-50"}, tt.mix)
			got := values[mi][si]
			if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("%s at %s = %v, want %v", tt.series, tt.mix, got, tt.want)
			}
		})
	}
}

// barRE matches a bar of a grouped bar chart: its tooltip names the
// series, the group and the value.
var barRE = regexp.MustCompile(`<rect [^>]*><title>([^<]+ [0-9]+/[0-9]+: [^<]+)</title></rect>`)

func TestChartsFromRecordedRun(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-from", "testdata/run.json", "-md", filepath.Join(dir, "results", "speed.md"), "-charts", filepath.Join(dir, "charts")}
	o, err := parseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "results"), 0o755); err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := runFrom(o, &md); err != nil {
		t.Fatal(err)
	}
	charts, err := os.ReadDir(filepath.Join(dir, "charts"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range charts {
		names = append(names, c.Name())
	}
	if !slices.Equal(names, []string{"speed-unbounded-cpu1.svg"}) {
		t.Fatalf("charts %q, want one per group and -cpu value of the recorded run", names)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "charts", names[0]))
	if err != nil {
		t.Fatal(err)
	}
	var bars []string
	for _, m := range barRE.FindAllSubmatch(svg, -1) {
		bars = append(bars, string(m[1]))
	}
	// go-cache: 100/0 median of 100 and 300 = 200 ns, 90/10 400 ns; tide
	// Get 400 and the median of 500 and 300 = 400; AppendGet 100 and 400;
	// View n/a; 75/25 and 50/50 not measured.
	want := []string{"tide Get 100/0: 0.5", "tide AppendGet 100/0: 2", "tide Get 90/10: 1", "tide AppendGet 90/10: 1"}
	if !slices.Equal(bars, want) {
		t.Errorf("bars %q, want %q", bars, want)
	}
	for _, s := range []string{
		"unbounded, -cpu 1: throughput relative to go-cache (median of 2 rounds)",
		">tide View (n/a)<", ">1.0× (View target)<", ">0.9× (Get target)<",
		">100/0<", ">90/10<", ">75/25<", ">50/50<",
	} {
		if !bytes.Contains(svg, []byte(s)) {
			t.Errorf("chart lacks %q", s)
		}
	}
	if bytes.Contains(svg, []byte(">go-cache<")) {
		t.Errorf("chart has a bar series for the reference itself")
	}
	file, err := os.ReadFile(o.md)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"`go run ./cmd/speed -groups unbounded -cpu 1 -rounds 2 -keys 10 -out results/speed.json -md results/speed.md`",
		"| 100/0 | 200 · 200 · 0 | 400 · 400 · 1.00 (0.50× · 0.50×) | 100 · 100 · 0 (2.00× · 2.00×) | n/a |",
		"../charts/speed-<group>-cpu<N>.svg",
		"![unbounded, -cpu 1: throughput relative to go-cache](../charts/speed-unbounded-cpu1.svg)",
	} {
		if !strings.Contains(string(file), s) {
			t.Errorf("report lacks %q:\n%s", s, file)
		}
	}
	if md.String() != string(file) {
		t.Errorf("the report printed differs from the one written")
	}

	// Drawn again from the same run, the chart is the same bytes.
	if err := runFrom(o, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(filepath.Join(dir, "charts", names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(svg, again) {
		t.Errorf("the chart of the same run differs between two drawings")
	}
}

func TestRunFromRejectsBadRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name, json string
	}{
		{"not JSON", "speed"},
		{"another command", `{"env": {"command": "go run ./cmd/memory -peer all"}, "cells": []}`},
		{"a command speed rejects", `{"env": {"command": "go run ./cmd/speed -cpu 0"}, "cells": []}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := options{from: write(strings.ReplaceAll(tt.name, " ", "-")+".json", tt.json), charts: filepath.Join(dir, "charts")}
			if err := runFrom(o, &strings.Builder{}); !errors.Is(err, errBadFrom) {
				t.Errorf("runFrom = %v, want %v", err, errBadFrom)
			}
		})
	}
	if err := runFrom(options{from: filepath.Join(dir, "absent.json")}, &strings.Builder{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("runFrom of a missing file = %v, want %v", err, os.ErrNotExist)
	}
}

func TestRecordedArgsInvertsCommandLine(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"-cpu", "1,2", "-rounds", "3", "-out", "results/speed.json"},
		{"-md", "my results/speed.md", "-charts", `a"b`, "-benchtime", ""},
	} {
		got, err := recordedArgs(commandLine(args))
		if err != nil || !slices.Equal(got, args) {
			t.Errorf("recordedArgs(commandLine(%q)) = %q, %v", args, got, err)
		}
	}
	for _, cmd := range []string{"", "go run ./cmd/speedy -cpu 1", "go test ./cmd/speed", `go run ./cmd/speed -md "unterminated`} {
		if args, err := recordedArgs(cmd); err == nil {
			t.Errorf("recordedArgs(%q) = %q, want an error", cmd, args)
		}
	}
}
