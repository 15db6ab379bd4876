// Command report turns the raw results of a full run (bench/results/) into
// the README's tables and the SVG charts in bench/charts/:
//
//	go run ./cmd/report -readme README.md
//
// Inputs (each optional): results/throughput.txt (go test -bench output,
// possibly with -rounds/-count repetitions and several -cpu values),
// results/memory.json, results/gc.json, results/expiry.json,
// results/expirecost.json. Throughput figures are medians over the
// repetitions; ratios compare tide with the best peer of the same run.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidekv/tide/bench"
	"github.com/tidekv/tide/bench/internal/chart"
)

var (
	resDir   = flag.String("results", "results", "results directory")
	chartDir = flag.String("charts", "charts", "charts directory")
	readme   = flag.String("readme", "", "splice the tables into this file between the results markers")
	out      = flag.String("out", "results/REPORT.md", "write the tables here")
	note     = flag.String("note", "", "a line to print under the environment (e.g. the commit measured)")
)

var mixes = []string{"100-0", "90-10", "75-25", "50-50"}

type key struct {
	bench, ttl, peer, mix string
	cpu                   int
}

type sample struct{ ns, cpu, bytes, allocs []float64 }

var (
	lineRE = regexp.MustCompile(`^Benchmark(\S+)\s+\d+\s+([\d.]+) ns/op(.*)$`)
	metRE  = regexp.MustCompile(`([\d.]+) (B/op|allocs/op|cpu-ns/op)`)
	numRE  = regexp.MustCompile(`#\d+`)
)

func splitCPU(val string, known []string) (string, int) {
	if slices.Contains(known, val) {
		return val, 1
	}
	if i := strings.LastIndex(val, "-"); i > 0 {
		if n, err := strconv.Atoi(val[i+1:]); err == nil && slices.Contains(known, val[:i]) {
			return val[:i], n
		}
	}
	return val, 1
}

func parseThroughput(path string) (map[key]*sample, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data := map[key]*sample{}
	var hdr []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		for _, p := range []string{"goos:", "goarch:", "cpu:", "pkg:"} {
			if strings.HasPrefix(l, p) && !slices.Contains(hdr, l) {
				hdr = append(hdr, l)
			}
		}
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := numRE.ReplaceAllString(m[1], "")
		parts := strings.Split(name, "/")
		if parts[0] != "Throughput" && parts[0] != "Miss" {
			continue
		}
		k := key{bench: parts[0]}
		for i, p := range parts[1:] {
			kv := strings.SplitN(p, "=", 2)
			if len(kv) != 2 {
				continue
			}
			v := kv[1]
			if i == len(parts)-2 {
				known := mixes
				if kv[0] == "peer" {
					known = bench.PeerNames()
				}
				v, k.cpu = splitCPU(v, known)
			}
			switch kv[0] {
			case "ttl":
				k.ttl = v
			case "peer":
				k.peer = v
			case "mix":
				k.mix = v
			}
		}
		s := data[k]
		if s == nil {
			s = &sample{}
			data[k] = s
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		s.ns = append(s.ns, ns)
		for _, mm := range metRE.FindAllStringSubmatch(m[3], -1) {
			v, _ := strconv.ParseFloat(mm[1], 64)
			switch mm[2] {
			case "B/op":
				s.bytes = append(s.bytes, v)
			case "allocs/op":
				s.allocs = append(s.allocs, v)
			case "cpu-ns/op":
				s.cpu = append(s.cpu, v)
			}
		}
	}
	return data, hdr, sc.Err()
}

func med(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return bench.Median(slices.Clone(xs))
}

func isTide(p string) bool { return strings.HasPrefix(p, "tide") }

func main() {
	flag.Parse()
	var md, sum bytes.Buffer
	w := func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }
	target := func(name, measured string, met bool) {
		m := "**missed**"
		if met {
			m = "met"
		}
		fmt.Fprintf(&sum, "| %s | %s | %s |\n", name, measured, m)
	}
	os.MkdirAll(*chartDir, 0o755)

	data, hdr, err := parseThroughput(filepath.Join(*resDir, "throughput.txt"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "throughput:", err)
	}
	if len(data) > 0 {
		cpus := map[int]bool{}
		reps := 0
		for k, s := range data {
			cpus[k.cpu] = true
			reps = max(reps, len(s.ns))
		}
		w("### Throughput\n\n`%s`; each cell: median wall ns/op · median CPU ns/op (process user+system time per op, GC included) of %d interleaved repetitions (lower is better); allocs/op in parentheses where not 0. ", strings.Join(hdr, "`, `"), reps)
		w("Ratio = best peer's ns/op ÷ tide's, on wall time · on CPU time (higher is better for tide; target ≥ 1.25 at -cpu 2). The machine is shared and was oversubscribed during the run (load average ≫ 2), so wall times carry other tenants' load; CPU time per op is the steadier measure.\n\n")
		cpuList := []int{}
		for c := range cpus {
			cpuList = append(cpuList, c)
		}
		slices.Sort(cpuList)
		for _, cpu := range cpuList {
			for _, ttl := range []string{"off", "on"} {
				w("#### -cpu %d, per-entry TTL %s\n\n| peer |", cpu, ttl)
				for _, m := range mixes {
					w(" %s |", m)
				}
				w("\n|---|")
				for range mixes {
					w("---:|")
				}
				w("\n")
				best := make([]float64, len(mixes))
				bestName := make([]string, len(mixes))
				bestCPU := make([]float64, len(mixes))
				bestCPUName := make([]string, len(mixes))
				for i := range best {
					best[i], bestCPU[i] = math.Inf(1), math.Inf(1)
				}
				var chartVals [][]float64
				var chartPeers []string
				for _, p := range bench.Peers {
					row := fmt.Sprintf("| %s |", p.Name)
					any := false
					vals := make([]float64, len(mixes))
					for i, m := range mixes {
						s := data[key{"Throughput", ttl, p.Name, m, cpu}]
						vals[i] = math.NaN()
						if s == nil {
							row += " – |"
							continue
						}
						any = true
						ns, cn, al := med(s.ns), med(s.cpu), med(s.allocs)
						vals[i] = 1e3 / ns
						cell := fmt.Sprintf("%.0f · %.0f", ns, cn)
						if al > 0 {
							cell += fmt.Sprintf(" (%.0f)", al)
						}
						row += " " + cell + " |"
						if !isTide(p.Name) && ns < best[i] {
							best[i], bestName[i] = ns, p.Name
						}
						if !isTide(p.Name) && cn < bestCPU[i] {
							bestCPU[i], bestCPUName[i] = cn, p.Name
						}
					}
					if any {
						w("%s\n", row)
						chartPeers = append(chartPeers, p.Name)
						chartVals = append(chartVals, vals)
					}
				}
				for _, t := range []string{"tide", "tide-lru"} {
					w("| **%s ratio** |", t)
					for i, m := range mixes {
						s := data[key{"Throughput", ttl, t, m, cpu}]
						if s == nil || math.IsInf(best[i], 1) {
							w(" – |")
							continue
						}
						r := best[i] / med(s.ns)
						rc := bestCPU[i] / med(s.cpu)
						mark := func(r float64) string {
							if cpu != 2 {
								return ""
							}
							if r >= 1.25 {
								return " ✓"
							}
							return " ✗"
						}
						w(" %.2f× vs %s%s · %.2f× vs %s%s |", r, bestName[i], mark(r), rc, bestCPUName[i], mark(rc))
						if cpu == 2 && t == "tide" {
							target(fmt.Sprintf("throughput ≥ 1.25× best peer, TTL %s, %s, -cpu 2", ttl, m),
								fmt.Sprintf("%.2f× (wall, vs %s) · %.2f× (CPU, vs %s)", r, bestName[i], rc, bestCPUName[i]), r >= 1.25 && rc >= 1.25)
							if m == "100-0" && ttl == "off" {
								al := med(s.allocs)
								target("0 allocs/op on the append-style read (AppendGet)", fmt.Sprintf("%.0f allocs/op", al), al == 0)
							}
						}
					}
					w("\n")
				}
				w("\n")
				// chart: groups = mixes, series = peers, Mops/s
				g := make([][]float64, len(mixes))
				for i := range mixes {
					for j := range chartPeers {
						g[i] = append(g[i], chartVals[j][i])
					}
				}
				name := fmt.Sprintf("throughput-ttl-%s-cpu%d.svg", ttl, cpu)
				if err := chart.WriteFile(filepath.Join(*chartDir, name), chart.GroupedBars(fmt.Sprintf("Throughput, 1M keys, Zipf 1.01, TTL %s, -cpu %d (median)", ttl, cpu), "million ops/s (higher is better)", mixes, chartPeers, g)); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
				w("![throughput TTL %s cpu %d](charts/%s)\n\n", ttl, cpu, name)
			}
			// miss table
			w("#### -cpu %d, Get of missing keys\n\n| peer | ns/op | CPU ns/op | allocs/op |\n|---|---:|---:|---:|\n", cpu)
			bestMiss, bestMissName := math.Inf(1), ""
			bestMissCPU, bestMissCPUName := math.Inf(1), ""
			for _, p := range bench.Peers {
				s := data[key{bench: "Miss", peer: p.Name, cpu: cpu}]
				if s == nil {
					continue
				}
				w("| %s | %.0f | %.0f | %.0f |\n", p.Name, med(s.ns), med(s.cpu), med(s.allocs))
				if !isTide(p.Name) && med(s.ns) < bestMiss {
					bestMiss, bestMissName = med(s.ns), p.Name
				}
				if !isTide(p.Name) && med(s.cpu) < bestMissCPU {
					bestMissCPU, bestMissCPUName = med(s.cpu), p.Name
				}
			}
			if s := data[key{bench: "Miss", peer: "tide", cpu: cpu}]; s != nil && bestMissName != "" {
				w("| **tide ratio** | %.2f× vs %s | %.2f× vs %s | |\n", bestMiss/med(s.ns), bestMissName, bestMissCPU/med(s.cpu), bestMissCPUName)
			}
			w("\n")
		}
	}

	// memory
	var mem struct {
		Env     bench.Env            `json:"env"`
		Results []bench.MemoryResult `json:"results"`
	}
	if readJSON(filepath.Join(*resDir, "memory.json"), &mem) {
		w("### Memory overhead\n\n%d entries, %d-byte keys, %d-byte values; live heap after runtime.GC() (one process per peer; %s, %s). Overhead = heap per resident entry − key − value. Target for tide: ≤ 64 B.\n\n", mem.Results[0].Entries, bench.KeyLen, bench.ValueLen, mem.Env.Go, mem.Env.Date)
		w("| peer | resident | heap MiB | B/entry | overhead B/entry |\n|---|---:|---:|---:|---:|\n")
		var labels []string
		var vals []float64
		for _, r := range mem.Results {
			if r.Peer == "tide" {
				target(fmt.Sprintf("memory overhead ≤ 64 B/entry (%s)", r.Peer), fmt.Sprintf("%.1f B", r.Overhead), r.Overhead <= 64)
			}
			w("| %s | %d | %.1f | %.1f | **%.1f** |\n", r.Peer, r.Resident, float64(r.HeapBytes)/(1<<20), r.PerEntry, r.Overhead)
			labels = append(labels, r.Peer)
			vals = append(vals, r.Overhead)
		}
		w("\n![memory](charts/memory.svg)\n\n")
		writeChart(filepath.Join(*chartDir, "memory.svg"), chart.HBars("Heap overhead per entry beyond key + value (1M entries, 16 B keys, 64 B values)", "bytes per entry (lower is better)", labels, vals, false, 64, "target 64 B"))
	}
	var gc struct {
		Env     bench.Env            `json:"env"`
		Results []bench.MemoryResult `json:"results"`
	}
	if readJSON(filepath.Join(*resDir, "gc.json"), &gc) {
		w("### GC cost\n\nWall time of a forced runtime.GC() with %d entries resident (median of %d; one process per peer). Target for tide: within 5× of freecache.\n\n", gc.Results[0].Entries, len(gc.Results[0].GCMs))
		w("| peer | heap MiB | GC median ms | all runs ms |\n|---|---:|---:|---|\n")
		var labels []string
		var vals []float64
		fc := math.NaN()
		var tideGC float64
		for _, r := range gc.Results {
			var runs []string
			for _, x := range r.GCMs {
				runs = append(runs, fmt.Sprintf("%.1f", x))
			}
			w("| %s | %.0f | **%.2f** | %s |\n", r.Peer, float64(r.HeapBytes)/(1<<20), r.GCMedianMs, strings.Join(runs, ", "))
			labels = append(labels, r.Peer)
			vals = append(vals, r.GCMedianMs)
			if r.Peer == "freecache" {
				fc = r.GCMedianMs
			}
			if r.Peer == "tide" {
				tideGC = r.GCMedianMs
			}
		}
		if !math.IsNaN(fc) && tideGC > 0 {
			w("\ntide ÷ freecache = %.2f× (target ≤ 5×).\n", tideGC/fc)
			target(fmt.Sprintf("forced GC at %s entries within 5× of freecache", count(gc.Results[0].Entries)), fmt.Sprintf("%.2f ms vs %.2f ms = %.2f×", tideGC, fc, tideGC/fc), tideGC/fc <= 5)
		}
		w("\n![gc](charts/gc.svg)\n\n")
		writeChart(filepath.Join(*chartDir, "gc.svg"), chart.HBars(fmt.Sprintf("Forced runtime.GC() with %s entries resident (median)", count(gc.Results[0].Entries)), "milliseconds, log scale (lower is better)", labels, vals, true, 5*fc, "5× freecache"))
	}
	var exp struct {
		Env     bench.Env            `json:"env"`
		Results []bench.ExpiryResult `json:"results"`
	}
	if readJSON(filepath.Join(*resDir, "expiry.json"), &exp) {
		w("### Expiry reclamation\n\n%d entries with TTLs uniform in [1 s, 2 s], never read again; every 250 ms: runtime.GC(), live heap above the baseline, and resident entries past their deadline. Times are seconds after the **last** deadline (target for tide: ≤ 1 s); sampling starts when the fill ends, and on a loaded machine the fill itself takes seconds, so early entries expire before the first sample and the peak understates the full set. \"Heap back\" = heap above baseline ≤ 10%% of its peak; \"never\" = not within 6 s after the last deadline.\n\n", exp.Results[0].Entries)
		w("| peer | TTL | peak MiB | heap back after (s) | no expired entry resident after (s) | expired entries resident at +1 s |\n|---|---|---:|---:|---:|---:|\n")
		var names []string
		var xs, ys [][]float64
		for _, r := range exp.Results {
			at1 := "?"
			if r.ClearAfter >= 0 && r.ClearAfter <= 1 {
				at1 = "0"
			}
			for _, s := range r.Samples {
				if s.T >= 1 {
					if s.ExpiredLeft >= 0 {
						at1 = strconv.Itoa(s.ExpiredLeft)
					}
					break
				}
			}
			clear := secs(r.ClearAfter)
			counted := false
			for _, s := range r.Samples {
				counted = counted || s.ExpiredLeft >= 0
			}
			switch {
			case strings.HasPrefix(r.TTL, "none"):
				clear, at1 = "n/a (no TTL)", "n/a"
			case !counted:
				clear, at1 = "n/a (no entry count)", "n/a"
			}
			w("| %s | %s | %.0f | %s | %s | %s |\n", r.Peer, r.TTL, r.PeakMB, secs(r.HeapBackAfter), clear, at1)
			if r.Peer == "tide" {
				worst := math.Max(r.HeapBackAfter, r.ClearAfter)
				ok := r.HeapBackAfter >= 0 && r.ClearAfter >= 0 && worst <= 1
				target(fmt.Sprintf("expired memory reclaimed within 1 s of the deadline (%s keys)", count(r.Entries)), fmt.Sprintf("heap back +%s s, no expired entry +%s s after the last deadline", secs(r.HeapBackAfter), secs(r.ClearAfter)), ok)
			}
			var x, y []float64
			for _, s := range r.Samples {
				x = append(x, s.T)
				y = append(y, s.HeapMB)
			}
			names = append(names, r.Peer)
			xs = append(xs, x)
			ys = append(ys, y)
		}
		w("\n![expiry](charts/expiry.svg)\n\n")
		writeChart(filepath.Join(*chartDir, "expiry.svg"), chart.Lines(fmt.Sprintf("Heap above baseline after %s entries with TTL 1–2 s (after runtime.GC)", count(exp.Results[0].Entries)), "seconds after the last deadline", "MiB", names, xs, ys, 1, "+1 s"))
	}
	var cost struct {
		Env     bench.Env `json:"env"`
		Results []struct {
			Peer, Method string
			Alone        bench.ExpireCostResult
			Loaded       bench.ExpireCostResult
			Ratio        float64
			CPURatio     float64 `json:"cpu_ratio"`
			Err          string
		} `json:"results"`
	}
	if readJSON(filepath.Join(*resDir, "expirecost.json"), &cost) {
		reps := 0
		for _, r := range cost.Results {
			reps = max(reps, len(r.Alone.Ms))
		}
		w("### Cost of expiring 10k due keys, alone and with not-yet-due keys present\n\n")
		w("An explicit, timed expiry pass (median of %d, fresh cache each, the two cases alternating in one process; run of %s, `go run ./cmd/expiry -peer all -cost`). Each time cell: wall ms · process CPU ms (on a shared machine wall time also counts other processes' turns). Target for tide: ≤ 2× growth.\n\n", reps, dateOf(cost.Env.Date))
		w("| peer | pass | 10k due alone ms | + not-yet-due ms | growth | growth, CPU time |\n|---|---|---:|---:|---:|---:|\n")
		for _, r := range cost.Results {
			if r.Err != "" {
				w("| %s | n/a: %s | | | | |\n", r.Peer, r.Err)
				continue
			}
			w("| %s | %s | %.2f · %.2f | %.2f · %.2f (%d) | **%.2f×** | %.2f× |\n", r.Peer, r.Method, r.Alone.MedianMs, r.Alone.MedianCPUMs, r.Loaded.MedianMs, r.Loaded.MedianCPUMs, r.Loaded.Resident, r.Ratio, r.CPURatio)
			if r.Peer == "tide" {
				target(fmt.Sprintf("expiring 10k due keys grows ≤ 2× with %s not-yet-due keys", count(r.Loaded.Resident)), fmt.Sprintf("%.2f ms → %.2f ms = %.2f× (CPU time: %.2f×; run of %s)", r.Alone.MedianMs, r.Loaded.MedianMs, r.Ratio, r.CPURatio, dateOf(cost.Env.Date)), r.Ratio <= 2)
			}
		}
		w("\n")
	}

	var all bytes.Buffer
	var env struct {
		Env bench.Env `json:"env"`
	}
	if readJSON(filepath.Join(*resDir, "memory.json"), &env) {
		e := env.Env
		fmt.Fprintf(&all, "Run of %s on %s, %d CPUs (%s), %s. Peer versions as in the table above.", e.Date[:10], e.OS, e.CPUs, e.CPU, e.Go)
		if *note != "" {
			fmt.Fprintf(&all, " %s", *note)
		}
		all.WriteString("\n\n")
	}
	if sum.Len() > 0 {
		all.WriteString("### Targets\n\n| target | measured | status |\n|---|---|---|\n")
		all.Write(sum.Bytes())
		all.WriteString("\n")
	}
	all.Write(md.Bytes())
	md = all
	os.WriteFile(*out, md.Bytes(), 0o644)
	if *readme != "" {
		b, err := os.ReadFile(*readme)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		const begin, end = "<!-- results:begin -->", "<!-- results:end -->"
		i, j := bytes.Index(b, []byte(begin)), bytes.Index(b, []byte(end))
		if i < 0 || j < i {
			fmt.Fprintln(os.Stderr, "readme has no results markers")
			os.Exit(1)
		}
		nb := append(append(append([]byte{}, b[:i+len(begin)]...), '\n', '\n'), md.Bytes()...)
		nb = append(nb, b[j:]...)
		os.WriteFile(*readme, nb, 0o644)
	}
	fmt.Print(md.String())
}

// writeChart writes one chart; a failure is reported and the report goes on.
func writeChart(path string, doc []byte) {
	if err := chart.WriteFile(path, doc); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

func count(n int) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return strconv.Itoa(n)
}

func secs(s float64) string {
	if s < 0 {
		return "never (in the run)"
	}
	return fmt.Sprintf("%.2f", s)
}

func readJSON(path string, v any) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		fmt.Fprintln(os.Stderr, path, err)
		return false
	}
	return true
}

// dateOf returns the day of an RFC 3339 date.
func dateOf(d string) string {
	if len(d) >= 10 {
		return d[:10]
	}
	return d
}
