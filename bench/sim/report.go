package sim

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// Table is the result of one trace: Ratios[capacity][contender], and the
// standard error of each (SE, as RunSE gives it; nil, or NaN in a cell,
// where it is not known).
type Table struct {
	Trace      *Trace
	Accesses   int
	Contenders []Contender
	Ratios     [][]float64
	SE         [][]float64
}

// se is the standard error of cell (i, j): NaN if unknown.
func (t *Table) se(i, j int) float64 {
	if j < 0 || t.SE == nil || t.SE[i] == nil {
		return math.NaN()
	}
	return t.SE[i][j]
}

// diffSE is the standard error of the difference of cells (i, a) and
// (i, b), whose runs are independent: √(se_a² + se_b²); a column whose
// spread is not known counts as exact when exact says so (a
// deterministic policy alone: TinyLFU, S3-FIFO), else makes it NaN.
func (t *Table) diffSE(i, a, b int, exactB bool) float64 {
	sa, sb := t.se(i, a), t.se(i, b)
	if exactB && math.IsNaN(sb) {
		sb = 0
	}
	return math.Hypot(sa, sb)
}

// pm formats a difference d with its standard error e ("+0.28 ± 0.31"),
// or d alone if e is not known.
func pm(d, e float64) string {
	if math.IsNaN(e) {
		return fmt.Sprintf("%+.2f", d)
	}
	return fmt.Sprintf("%+.2f ± %.2f", d, e)
}

func (t *Table) col(name string) int {
	for j, c := range t.Contenders {
		if c.Name == name {
			return j
		}
	}
	return -1
}

// best2 returns max(tinylfu, s3fifo) at row i (-Inf if neither ran).
func (t *Table) best2(i int) float64 {
	b := math.Inf(-1)
	for _, n := range []string{ColTinyLFU, ColS3FIFO} {
		if j := t.col(n); j >= 0 {
			b = max(b, t.Ratios[i][j])
		}
	}
	return b
}

// writeMisses lists the rows where adaptive misses a goal of issue 14, and
// the rows where it is below otter or more than 5 points below OPT.
func writeMisses(p func(string, ...any), tables []*Table) {
	p("### Rows that miss a goal\n\n")
	p("Every row where adaptive < otter, adaptive < max(tinylfu, s3fifo) − 0.5, |engine − policy| > 0.5, or OPT − adaptive > 5 points. A gap is given with one standard error (±, from the spread of the seeds' or runs' hit ratios, as in the per-trace tables), where the columns have several runs: a gap within about two standard errors of its goal is as much the seeds' noise as the policy's.\n\n")
	p("| trace | capacity | adaptive | otter | max(tinylfu, s3fifo) | engine | OPT | misses |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	rows := 0
	for _, t := range tables {
		a, o, e, op := t.col(ColAdaptive), t.col(ColOtter), t.col(ColEngine), t.col(ColOPT)
		if a < 0 {
			continue
		}
		for i, c := range t.Trace.Caps {
			r := t.Ratios[i]
			var miss []string
			val := func(j int) string {
				if j < 0 {
					return "–"
				}
				return fmt.Sprintf("%.2f", r[j])
			}
			if o >= 0 && r[a] < r[o]-0.005 {
				miss = append(miss, "below otter by "+strings.TrimPrefix(pm(r[o]-r[a], t.diffSE(i, a, o, false)), "+"))
			}
			if b := t.best2(i); r[a] < b-0.5 {
				miss = append(miss, "below best2 by "+strings.TrimPrefix(pm(b-r[a], t.diffSE(i, a, -1, true)), "+"))
			}
			if e >= 0 && math.Abs(r[e]-r[a]) > 0.5 {
				miss = append(miss, "engine "+pm(r[e]-r[a], t.diffSE(i, e, a, false)))
			}
			if op >= 0 && r[op]-r[a] > 5 {
				miss = append(miss, fmt.Sprintf("OPT − %.2f", r[op]-r[a]))
			}
			if len(miss) == 0 {
				continue
			}
			rows++
			p("| %s | %s | %.2f | %s | %.2f | %s | %s | %s |\n", t.Trace.Name, capName(c), r[a], val(o), t.best2(i), val(e), val(op), strings.Join(miss, "; "))
		}
	}
	if rows == 0 {
		p("| – | | | | | | | none |\n")
	}
	p("\n")
}

// writeOPTGaps tabulates each usable cache's mean distance to OPT per
// trace (OPT − hit ratio, in points; smaller is better).
func writeOPTGaps(p func(string, ...any), tables []*Table) {
	if len(tables) == 0 || tables[0].col(ColOPT) < 0 {
		return
	}
	cs := tables[0].Contenders
	p("### Mean distance to OPT\n\n")
	p("OPT − hit ratio, in points, averaged over each trace's capacities (smaller is better).\n\n| trace |")
	for _, c := range cs {
		if !c.Oracle {
			p(" %s |", c.Name)
		}
	}
	p("\n|---|")
	for _, c := range cs {
		if !c.Oracle {
			p("---:|")
		}
	}
	p("\n")
	for _, t := range tables {
		op := t.col(ColOPT)
		p("| %s |", t.Trace.Name)
		for _, c := range cs {
			if c.Oracle {
				continue
			}
			j := t.col(c.Name)
			if j < 0 || op < 0 {
				p(" – |")
				continue
			}
			sum := 0.0
			for i := range t.Trace.Caps {
				sum += t.Ratios[i][op] - t.Ratios[i][j]
			}
			p(" %.2f |", sum/float64(len(t.Trace.Caps)))
		}
		p("\n")
	}
	p("\n")
}

// RefRow is one line of the exact-LRU reference check.
type RefRow struct {
	Trace                 string
	Capacity              int
	Reference             float64
	Exact, Approx         float64 // exact LRU, tide allkeys-lru
	ExactDiff, ApproxDiff float64
}

// ReferenceCheck runs the exact LRU and tide's allkeys-lru on every trace
// and capacity of ReferenceLRU.
func ReferenceCheck(workers int) []RefRow {
	var rows []RefRow
	var lru Contender
	for _, c := range TideContenders() {
		if c.Name == "tide allkeys-lru" {
			lru = c
		}
	}
	for _, t := range append(append([]*Trace{}, Traces...), Extra...) {
		ref := ReferenceLRU[t.Name]
		if ref == nil {
			continue
		}
		keys, err := t.Keys()
		if err != nil {
			continue
		}
		var caps []int
		for c := range ref {
			caps = append(caps, c)
		}
		slices.Sort(caps)
		res := Run(keys, caps, []Contender{LRUContender, lru}, workers)
		for i, c := range caps {
			rows = append(rows, RefRow{Trace: t.Name, Capacity: c, Reference: ref[c],
				Exact: res[i][0], Approx: res[i][1],
				ExactDiff: res[i][0] - ref[c], ApproxDiff: res[i][1] - res[i][0]})
		}
	}
	return rows
}

// CapName is how the report labels capacity c ("2k", "1250").
func CapName(c int) string { return capName(c) }

func capName(c int) string {
	if c >= 1000 && c%1000 == 0 {
		return fmt.Sprintf("%dk", c/1000)
	}
	return fmt.Sprint(c)
}

// WriteMarkdown writes the whole report.
//
// timing says how long the run took (free text).
func WriteMarkdown(w io.Writer, tables []*Table, ref []RefRow, cmd, timing string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# tide hit ratios\n\n")
	p("Generated by `cd bench && %s` (%s). Do not edit by hand.\n\n", cmd, timing)
	p("Method (Caffeine's, otter's, theine's): capacity in entries, cold start, every access is a read, a miss inserts the key, hit ratio = hits / accesses, in percent. ")
	p("tide's policies run through `sim.PolicyCache`, which calls them exactly as the engine does (Access on a hit; Miss, then Victim/Remove while full, then Add on a miss; every entry has Size 1, so the byte cap is the capacity; the clock advances 1µs per access). ")
	p("Peers: otter v2.4.0 (synchronous Executor, so eviction happens before Set returns), theine v0.6.3 and ristretto v2.4.2 (`Wait()` after every Set), golang-lru v2.0.7 LRU and 2Q, ttlcache v3 (WithCapacity). ")
	p("otter, theine and ristretto seed their hashes (or sampling) at random, so their cells vary from run to run: otter's are the mean of `-runs` runs (8 by default; more on a short trace, as for `tide adaptive` below), theine's and ristretto's of `-slow-runs` (1 by default, as `Wait` makes them slow); tide's policies alone are deterministic except allkeys-lfu, whose Morris counter draws from the runtime's random source; through the engine they are not (random hash seed). ")
	p("go-cache (never evicts), freecache and bigcache (byte caps over ring-buffer segments: no setting means N entries) are not simulated. volatile-* policies are the allkeys-* algorithms on the entries with a TTL and the traces have none, so they are not listed.\n\n")
	p("Columns: `tide adaptive` is the recommended policy (evict.Adaptive, bench.RecommendedPolicy) alone in the simulator, averaged over fixed hash seeds 0, 1, … (its choices depend on hash values: sampling, sketch collisions): at least `-engine-runs`, and more on a short trace, so that a cell averages at least `-engine-accesses` accesses in all (up to %d seeds; the count is under each trace's heading), since a short trace's hit ratio spreads over several points from seed to seed; `tide adaptive (engine)` is the same policy driving a real `engine.Engine` (sim.EngineCache: Get, and Set on a miss; 8-byte keys and %d-byte values, MaxBytes = capacity × %d bytes, so it holds exactly capacity entries; the engine's default shard count for that cap; per-shard policy instances under the engine-wide budget; the engine seeds its hash at random, so it is the mean of as many runs as the policy-only column has seeds; with one shard, which every cap below 8192 entries gets, the two columns differ only by the hash seeds). ", MaxSeedRuns, EngineValueSize, EngineEntrySize)
	p("`OPT` is Bélády's clairvoyant policy with bypass (sim.OPT): it reads the trace ahead, so it is the ceiling, not a cache, and is never bold.\n\n")
	p("Bold: best usable cache in the row. Δ otter = adaptive − otter; Δ best2 = adaptive − max(tinylfu, s3fifo); eng − pol = adaptive (engine) − adaptive; to OPT = OPT − adaptive; all in points. ± is one standard error of a difference, √(se₁² + se₂²), each se the standard deviation of a column's runs (hash seeds) over √runs; it is left out where a column ran once (a peer carried over from an earlier report, a single run).\n\n")

	if len(tables) > 0 {
		p("## Summary\n\n")
		p("Goals (issue 14): on every row adaptive ≥ otter, adaptive ≥ max(tinylfu, s3fifo) − 0.5, and |engine − policy| ≤ 0.5.\n\n")
		p("| trace | rows | adaptive ≥ otter | worst Δ otter | worst Δ best2 | worst eng − pol | mean adaptive | mean otter | mean OPT | mean to OPT |\n")
		p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, t := range tables {
			a, o, e, op := t.col(ColAdaptive), t.col(ColOtter), t.col(ColEngine), t.col(ColOPT)
			if a < 0 {
				continue
			}
			n := float64(len(t.Trace.Caps))
			var sa, so, sop float64
			wins := 0
			wo, wb, we := math.Inf(1), math.Inf(1), 0.0
			var woc, wbc, wec int
			for i, c := range t.Trace.Caps {
				r := t.Ratios[i]
				sa += r[a]
				if o >= 0 {
					so += r[o]
					if d := r[a] - r[o]; d < wo {
						wo, woc = d, c
					}
					if r[a] >= r[o]-0.005 {
						wins++
					}
				}
				if d := r[a] - t.best2(i); d < wb {
					wb, wbc = d, c
				}
				if e >= 0 {
					if d := r[e] - r[a]; math.Abs(d) > math.Abs(we) {
						we, wec = d, c
					}
				}
				if op >= 0 {
					sop += r[op]
				}
			}
			cell := func(ok bool, v float64, c int) string {
				if !ok {
					return "–"
				}
				return fmt.Sprintf("%+.2f (%s)", v, capName(c))
			}
			num := func(ok bool, v float64) string {
				if !ok {
					return "–"
				}
				return fmt.Sprintf("%.2f", v)
			}
			winsS := "–"
			if o >= 0 {
				winsS = fmt.Sprint(wins)
			}
			p("| %s | %d | %s | %s | %s | %s | %.2f | %s | %s | %s |\n", t.Trace.Name, len(t.Trace.Caps), winsS,
				cell(o >= 0, wo, woc), cell(true, wb, wbc), cell(e >= 0, we, wec), sa/n, num(o >= 0, so/n), num(op >= 0, sop/n), num(op >= 0, (sop-sa)/n))
		}
		p("\n")
		writeMisses(p, tables)
		writeOPTGaps(p, tables)
	}

	for _, t := range tables {
		p("## %s\n\n", t.Trace.Title)
		seeds := ""
		for _, c := range t.Contenders {
			if c.Name == ColAdaptive && c.Runs > 1 {
				seeds = fmt.Sprintf("; tide adaptive: mean of %d hash seeds", c.Runs)
			}
		}
		p("`%s`, %d accesses%s. Chart: [charts/hitratio-%s.svg](charts/hitratio-%s.svg)\n\n", t.Trace.Name, t.Accesses, seeds, t.Trace.Name, t.Trace.Name)
		a, o, e, op := t.col(ColAdaptive), t.col(ColOtter), t.col(ColEngine), t.col(ColOPT)
		// Each extra column is a difference and its standard error
		// (NaN: not known, printed without).
		type extra struct {
			name string
			ok   bool
			f    func(i int) (float64, float64)
		}
		extras := []extra{
			{"Δ otter", a >= 0 && o >= 0, func(i int) (float64, float64) {
				return t.Ratios[i][a] - t.Ratios[i][o], t.diffSE(i, a, o, false)
			}},
			{"Δ best2", a >= 0, func(i int) (float64, float64) {
				return t.Ratios[i][a] - t.best2(i), t.diffSE(i, a, -1, true)
			}},
			{"eng − pol", a >= 0 && e >= 0, func(i int) (float64, float64) {
				return t.Ratios[i][e] - t.Ratios[i][a], t.diffSE(i, e, a, false)
			}},
			{"to OPT", a >= 0 && op >= 0, func(i int) (float64, float64) {
				return t.Ratios[i][op] - t.Ratios[i][a], t.diffSE(i, a, op, true)
			}},
		}
		p("| capacity |")
		for _, c := range t.Contenders {
			p(" %s |", c.Name)
		}
		for _, x := range extras {
			if x.ok {
				p(" %s |", x.name)
			}
		}
		p("\n|---:|")
		for range t.Contenders {
			p("---:|")
		}
		for _, x := range extras {
			if x.ok {
				p("---:|")
			}
		}
		p("\n")
		for i, c := range t.Trace.Caps {
			best := -1.0
			for j, cn := range t.Contenders {
				if !cn.Oracle {
					best = max(best, t.Ratios[i][j])
				}
			}
			p("| %s |", capName(c))
			for j, cn := range t.Contenders {
				v := fmt.Sprintf("%.2f", t.Ratios[i][j])
				if !cn.Oracle && t.Ratios[i][j] >= best-0.005 {
					v = "**" + v + "**"
				}
				p(" %s |", v)
			}
			for _, x := range extras {
				if x.ok {
					p(" %s |", pm(x.f(i)))
				}
			}
			p("\n")
		}
		p("\n")
	}

	if len(ref) > 0 {
		p("## Exact LRU against the reference\n\n")
		p("The reference numbers are the exact-LRU hit ratios published in shared/traces/README.md. The exact LRU must match within 0.1 point (this validates the trace readers); tide's allkeys-lru is compared with the exact LRU.\n\n")
		p("| trace | capacity | reference | exact LRU | Δ ref | tide allkeys-lru | Δ exact |\n|---|---:|---:|---:|---:|---:|---:|\n")
		maxE, maxA := 0.0, 0.0
		for _, r := range ref {
			maxE = max(maxE, math.Abs(r.ExactDiff))
			maxA = max(maxA, math.Abs(r.ApproxDiff))
			p("| %s | %s | %.2f | %.2f | %+.2f | %.2f | %+.2f |\n", r.Trace, capName(r.Capacity), r.Reference, r.Exact, r.ExactDiff, r.Approx, r.ApproxDiff)
		}
		within := 0
		for _, r := range ref {
			if math.Abs(r.ApproxDiff) <= 1 {
				within++
			}
		}
		p("\nLargest |exact − reference|: %.2f points. tide allkeys-lru within 1 point of exact LRU on %d of %d rows; largest |Δ|: %.2f points.\n", maxE, within, len(ref), maxA)
	}
}

var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#000000", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79"}

// SVG draws hit ratio against capacity for every contender of t.
func SVG(t *Table) string {
	const (
		W, H         = 820.0, 440.0
		left, right  = 60.0, 200.0
		top, bottom  = 40.0, 50.0
		plotW, plotH = W - left - right, H - top - bottom
	)
	lo, hi := 100.0, 0.0
	for _, row := range t.Ratios {
		lo, hi = min(lo, slices.Min(row)), max(hi, slices.Max(row))
	}
	lo = math.Max(0, math.Floor(lo/10)*10)
	hi = math.Min(100, math.Ceil(hi/10)*10)
	if hi <= lo {
		hi = lo + 10
	}
	n := len(t.Trace.Caps)
	x := func(i int) float64 {
		if n == 1 {
			return left + plotW/2
		}
		return left + plotW*float64(i)/float64(n-1)
	}
	y := func(v float64) float64 { return top + plotH*(1-(v-lo)/(hi-lo)) }
	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	f(`<text x="%.0f" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(t.Trace.Title))
	for v := lo; v <= hi+1e-9; v += 10 {
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(v), left+plotW, y(v))
		f(`<text x="%.1f" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left-6, y(v)+4, v)
	}
	for i, c := range t.Trace.Caps {
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x(i), top, x(i), top+plotH)
		f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(i), top+plotH+18, capName(c))
	}
	f(`<text x="%.1f" y="%.1f" text-anchor="middle">capacity (entries)</text>`+"\n", left+plotW/2, H-10)
	f(`<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">hit ratio (%%)</text>`+"\n", top+plotH/2, top+plotH/2)
	for j, c := range t.Contenders {
		col := palette[j%len(palette)]
		dash, width := ` stroke-dasharray="5,3"`, 1.5
		if c.Tide {
			dash, width = "", 2.5
		}
		var pts []string
		for i := range t.Trace.Caps {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(t.Ratios[i][j])))
		}
		f(`<polyline fill="none" stroke="%s" stroke-width="%.1f"%s points="%s"/>`+"\n", col, width, dash, strings.Join(pts, " "))
		for i := range t.Trace.Caps {
			f(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s @ %s: %.2f%%</title></circle>`+"\n", x(i), y(t.Ratios[i][j]), col, html.EscapeString(c.Name), capName(t.Trace.Caps[i]), t.Ratios[i][j])
		}
		ly := top + 14 + 18*float64(j)
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`+"\n", W-right+15, ly, W-right+40, ly, col, width, dash)
		f(`<text x="%.1f" y="%.1f">%s</text>`+"\n", W-right+46, ly+4, html.EscapeString(c.Name))
	}
	f("</svg>\n")
	return b.String()
}
