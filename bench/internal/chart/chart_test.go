package chart

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestNiceMaxRoundsUpToAFriendlyScale(t *testing.T) {
	for _, tt := range []struct{ v, want float64 }{
		{0, 1}, {-3, 1}, {1, 1}, {1.2, 2}, {2, 2}, {2.47, 2.5}, {3, 5}, {7, 10}, {0.93, 1}, {0.21, 0.25}, {180, 200}, {1234, 2000},
	} {
		if got := niceMax(tt.v); math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("niceMax(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

var (
	barRE  = regexp.MustCompile(`<rect x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)" fill="[^"]+"><title>([^<]+: [^<]+)</title></rect>`)
	dashRE = regexp.MustCompile(`<line x1="[^"]+" y1="([^"]+)" x2="[^"]+" y2="([^"]+)" stroke="([^"]+)" stroke-width="1.5" stroke-dasharray="6,4"/>`)
)

func TestGroupedBarsDrawsEveryValueAndSkipsMissing(t *testing.T) {
	doc := GroupedBars("title <1>", "ratio", []string{"g1", "g2"}, []string{"a", "b"},
		[][]float64{{1, math.NaN()}, {0.5, 2}})
	var bars []string
	for _, m := range barRE.FindAllSubmatch(doc, -1) {
		bars = append(bars, string(m[3]))
	}
	if want := []string{"a g1: 1", "a g2: 0.5", "b g2: 2"}; strings.Join(bars, "|") != strings.Join(want, "|") {
		t.Errorf("bars %q, want %q (no bar for NaN)", bars, want)
	}
	if !bytes.Contains(doc, []byte("title &lt;1&gt;")) {
		t.Errorf("title not escaped:\n%s", doc)
	}
	if !bytes.HasPrefix(doc, []byte("<svg ")) || !bytes.HasSuffix(doc, []byte("</svg>\n")) {
		t.Errorf("not one closed SVG document:\n%s", doc)
	}
	if dashRE.Match(doc) {
		t.Errorf("reference line drawn without a Ref")
	}
}

// A reference line sits at its value on the same scale as the bars, even
// when every bar is below it.
func TestGroupedBarsPlacesReferenceLinesOnTheBarScale(t *testing.T) {
	doc := GroupedBars("t", "y", []string{"g"}, []string{"a", "b"}, [][]float64{{0.2, 0.4}},
		Ref{Value: 1, Label: "target 1"}, Ref{Value: 0.4, Label: "target 0.4", Color: "#888"})
	bars := barRE.FindAllSubmatch(doc, -1)
	lines := dashRE.FindAllSubmatch(doc, -1)
	if len(bars) != 2 || len(lines) != 2 {
		t.Fatalf("%d bars, %d reference lines; want 2 and 2:\n%s", len(bars), len(lines), doc)
	}
	num := func(b []byte) float64 {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// Bar b (0.4) has its top where the 0.4 line is; the 1.0 line is at
	// the top of the axis (niceMax(1) = 1), inside the chart.
	if top, line := num(bars[1][1]), num(lines[1][1]); math.Abs(top-line) > 0.11 {
		t.Errorf("bar of 0.4 tops at y %v, the 0.4 line is at y %v", top, line)
	}
	if y := num(lines[0][1]); y < 40 || y > 41 {
		t.Errorf("the 1.0 line is at y %v, want the top of the plot (40)", y)
	}
	if string(lines[0][3]) != "#222" || string(lines[1][3]) != "#888" {
		t.Errorf("line colours %s, %s; want the default and the given one", lines[0][3], lines[1][3])
	}
	for _, s := range []string{">target 1<", ">target 0.4<"} {
		if !bytes.Contains(doc, []byte(s)) {
			t.Errorf("no legend entry %q", s)
		}
	}
}

func TestChartsAreDeterministic(t *testing.T) {
	draw := func() [][]byte {
		return [][]byte{
			GroupedBars("t", "y", []string{"g1", "g2"}, []string{"a", "b", "c"}, [][]float64{{1, 2, 3}, {3, math.NaN(), 1}}, Ref{Value: 1, Label: "1×"}),
			HBars("t", "x", []string{"tide", "p"}, []float64{3, math.NaN()}, true, 10, "target"),
			Lines("t", "x", "y", []string{"a", "b"}, [][]float64{{0, 1}, {0, 2}}, [][]float64{{1, 2}, {2, 1}}, 1, "+1"),
		}
	}
	a, b := draw(), draw()
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("chart %d differs between two drawings of the same data", i)
		}
	}
}
