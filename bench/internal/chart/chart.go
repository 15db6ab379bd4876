// Package chart draws the benchmark figures as SVG documents: grouped bar
// charts, horizontal bars and line charts, enough for the README's figures
// without a plotting dependency.
//
// Every function returns the whole document; the output depends only on
// the arguments (no clock, no randomness, no map order), so charts are
// reproducible from the results they are drawn from. The functions are
// safe for concurrent use.
package chart

import (
	"fmt"
	"math"
	"os"
	"strings"
)

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"}

type svg struct {
	b    strings.Builder
	w, h float64
}

func newSVG(w, h float64) *svg {
	s := &svg{w: w, h: h}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&s.b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	return s
}

func esc(t string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(t)
}

func (s *svg) text(x, y float64, anchor, t string, extra ...string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, strings.Join(extra, " "), esc(t))
}

func (s *svg) rect(x, y, w, h float64, fill, title string) {
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n", x, y, w, h, fill, esc(title))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	d := ""
	if dash != "" {
		d = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
	}
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`+"\n", x1, y1, x2, y2, stroke, width, d)
}

func (s *svg) polyline(pts [][2]float64, stroke string) {
	var p []string
	for _, q := range pts {
		p = append(p, fmt.Sprintf("%.1f,%.1f", q[0], q[1]))
	}
	fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(p, " "), stroke)
}

// bytes closes the document and returns it.
func (s *svg) bytes() []byte {
	s.b.WriteString("</svg>\n")
	return []byte(s.b.String())
}

// WriteFile writes a document returned by one of the drawing functions.
func WriteFile(path string, doc []byte) error {
	return os.WriteFile(path, doc, 0o644)
}

// niceMax rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// Ref is a horizontal reference line across a grouped bar chart, such as
// a target ratio.
type Ref struct {
	Value float64
	Label string
	Color string // an SVG colour; "" is near-black
}

// GroupedBars draws groups (x axis) of bars (one per series); values[g][s]
// (NaN = missing, no bar). refs draw dashed horizontal lines; the y axis
// reaches at least the highest of them.
func GroupedBars(title, ylabel string, groups, series []string, values [][]float64, refs ...Ref) []byte {
	const left, right, top, bottom = 70.0, 160.0, 40.0, 50.0
	w := math.Max(700, left+right+float64(len(groups)*(len(series)*14+24)))
	h := 420.0
	s := newSVG(w, h)
	s.text(w/2, 22, "middle", title, `font-size="15" font-weight="bold"`)
	maxV := 0.0
	for _, r := range refs {
		maxV = math.Max(maxV, r.Value)
	}
	for _, g := range values {
		for _, v := range g {
			if !math.IsNaN(v) {
				maxV = math.Max(maxV, v)
			}
		}
	}
	maxV = niceMax(maxV)
	ph := h - top - bottom
	pw := w - left - right
	for i := 0; i <= 5; i++ {
		v := maxV * float64(i) / 5
		y := top + ph - ph*float64(i)/5
		s.line(left, y, left+pw, y, "#ddd", 1, "")
		s.text(left-6, y+4, "end", fmt.Sprintf("%g", v))
	}
	s.text(16, top+ph/2, "middle", ylabel, fmt.Sprintf(`transform="rotate(-90 16 %.1f)"`, top+ph/2))
	gw := pw / float64(len(groups))
	bw := (gw - 16) / float64(len(series))
	for gi, g := range groups {
		x0 := left + float64(gi)*gw + 8
		for si := range series {
			v := values[gi][si]
			if math.IsNaN(v) {
				continue
			}
			bh := ph * v / maxV
			s.rect(x0+float64(si)*bw, top+ph-bh, bw-1, bh, palette[si%len(palette)], fmt.Sprintf("%s %s: %.3g", series[si], g, v))
		}
		s.text(left+float64(gi)*gw+gw/2, top+ph+18, "middle", g)
	}
	s.line(left, top+ph, left+pw, top+ph, "#333", 1, "")
	for si, name := range series {
		y := top + 10 + float64(si)*18
		s.rect(left+pw+14, y-10, 12, 12, palette[si%len(palette)], name)
		s.text(left+pw+32, y, "start", name)
	}
	// Reference lines over the bars, labelled in the legend (lines close
	// to each other would overlap labels drawn beside them).
	for ri, r := range refs {
		col := r.Color
		if col == "" {
			col = "#222"
		}
		y := top + ph - ph*r.Value/maxV
		s.line(left, y, left+pw, y, col, 1.5, "6,4")
		ly := top + 10 + float64(len(series)+ri)*18 + 6
		s.line(left+pw+14, ly-4, left+pw+28, ly-4, col, 1.5, "4,2")
		s.text(left+pw+32, ly, "start", r.Label, fmt.Sprintf(`fill="%s"`, col))
	}
	return s.bytes()
}

// HBars draws one horizontal bar per label (NaN = "n/a"); log scales the
// axis; target, if > 0, draws a dashed vertical line labelled targetLabel.
func HBars(title, xlabel string, labels []string, values []float64, log bool, target float64, targetLabel string) []byte {
	const left, right, top, bottom = 130.0, 40.0, 40.0, 50.0
	h := top + bottom + float64(len(labels))*26
	w := 760.0
	s := newSVG(w, h)
	s.text(w/2, 22, "middle", title, `font-size="15" font-weight="bold"`)
	pw := w - left - right
	maxV := target
	minV := math.Inf(1)
	for _, v := range values {
		if !math.IsNaN(v) {
			maxV = math.Max(maxV, v)
			if v > 0 {
				minV = math.Min(minV, v)
			}
		}
	}
	var pos func(v float64) float64
	if log {
		lo := math.Pow(10, math.Floor(math.Log10(math.Min(minV, math.Max(target, minV)))))
		hi := math.Pow(10, math.Ceil(math.Log10(maxV)))
		pos = func(v float64) float64 {
			v = math.Max(v, lo)
			return left + pw*(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
		}
		for d := lo; d <= hi*1.0001; d *= 10 {
			x := pos(d)
			s.line(x, top, x, h-bottom, "#ddd", 1, "")
			s.text(x, h-bottom+16, "middle", fmt.Sprintf("%g", d))
		}
	} else {
		maxV = niceMax(maxV)
		pos = func(v float64) float64 { return left + pw*v/maxV }
		for i := 0; i <= 5; i++ {
			v := maxV * float64(i) / 5
			s.line(pos(v), top, pos(v), h-bottom, "#ddd", 1, "")
			s.text(pos(v), h-bottom+16, "middle", fmt.Sprintf("%g", v))
		}
	}
	s.text(left+pw/2, h-12, "middle", xlabel)
	for i, l := range labels {
		y := top + float64(i)*26
		s.text(left-8, y+16, "end", l)
		v := values[i]
		if math.IsNaN(v) {
			s.text(left+4, y+16, "start", "n/a", `fill="#888"`)
			continue
		}
		col := palette[0]
		if strings.HasPrefix(l, "tide") {
			col = palette[3]
		}
		s.rect(left, y+4, math.Max(1, pos(v)-left), 18, col, fmt.Sprintf("%s: %.3g", l, v))
		s.text(pos(v)+4, y+17, "start", fmt.Sprintf("%.3g", v), `font-size="11"`)
	}
	if target > 0 {
		s.line(pos(target), top-4, pos(target), h-bottom, "#d62728", 1.5, "6,4")
		s.text(pos(target), top-8, "middle", targetLabel, `fill="#d62728"`)
	}
	return s.bytes()
}

// Lines draws one polyline per series over a shared x axis; vline, unless
// NaN, draws a dashed vertical line labelled vlabel.
func Lines(title, xlabel, ylabel string, names []string, xs, ys [][]float64, vline float64, vlabel string) []byte {
	const left, right, top, bottom = 70.0, 160.0, 40.0, 50.0
	w, h := 860.0, 440.0
	s := newSVG(w, h)
	s.text(w/2, 22, "middle", title, `font-size="15" font-weight="bold"`)
	pw, ph := w-left-right, h-top-bottom
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for i := range xs {
		for j := range xs[i] {
			minX = math.Min(minX, xs[i][j])
			maxX = math.Max(maxX, xs[i][j])
			maxY = math.Max(maxY, ys[i][j])
		}
	}
	minX, maxX = math.Floor(minX), math.Ceil(maxX)
	maxY = niceMax(maxY)
	px := func(x float64) float64 { return left + pw*(x-minX)/(maxX-minX) }
	py := func(y float64) float64 { return top + ph - ph*y/maxY }
	for i := 0; i <= 5; i++ {
		v := maxY * float64(i) / 5
		s.line(left, py(v), left+pw, py(v), "#ddd", 1, "")
		s.text(left-6, py(v)+4, "end", fmt.Sprintf("%g", v))
	}
	for x := minX; x <= maxX; x++ {
		s.line(px(x), top, px(x), top+ph, "#eee", 1, "")
		s.text(px(x), top+ph+16, "middle", fmt.Sprintf("%g", x))
	}
	if !math.IsNaN(vline) {
		s.line(px(vline), top, px(vline), top+ph, "#d62728", 1.5, "6,4")
		s.text(px(vline)+4, top+12, "start", vlabel, `fill="#d62728"`)
	}
	s.text(left+pw/2, h-12, "middle", xlabel)
	s.text(16, top+ph/2, "middle", ylabel, fmt.Sprintf(`transform="rotate(-90 16 %.1f)"`, top+ph/2))
	for i, n := range names {
		var pts [][2]float64
		for j := range xs[i] {
			pts = append(pts, [2]float64{px(xs[i][j]), py(ys[i][j])})
		}
		s.polyline(pts, palette[i%len(palette)])
		y := top + 10 + float64(i)*18
		s.rect(left+pw+14, y-10, 12, 12, palette[i%len(palette)], n)
		s.text(left+pw+32, y, "start", n)
	}
	return s.bytes()
}
