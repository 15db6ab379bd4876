package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidekv/tide/bench"
)

// key names one measurement across rounds.
type key struct {
	cache, path, mix string
	cpu              int
}

// stat is the median over rounds of one measurement.
type stat struct {
	ns, cpu, allocs, hit float64
	rounds               int
	na                   bool
}

// aggregate folds the rounds of every measurement into medians.
func aggregate(cells []cell) map[key]stat {
	type acc struct {
		ns, cpu, allocs, hit []float64
		na                   bool
	}
	accs := map[key]*acc{}
	for _, c := range cells {
		for _, r := range c.Results {
			k := key{c.Cache, r.Path, r.Mix, c.CPU}
			a := accs[k]
			if a == nil {
				a = &acc{}
				accs[k] = a
			}
			if r.NA {
				a.na = true
				continue
			}
			a.ns = append(a.ns, r.NsOp)
			a.cpu = append(a.cpu, r.CPUNsOp)
			a.allocs = append(a.allocs, r.AllocsOp)
			a.hit = append(a.hit, r.HitPct)
		}
	}
	out := make(map[key]stat, len(accs))
	for k, a := range accs {
		out[k] = stat{ns: bench.Median(a.ns), cpu: bench.Median(a.cpu), allocs: bench.Median(a.allocs),
			hit: bench.Median(a.hit), rounds: len(a.ns), na: a.na && len(a.ns) == 0}
	}
	return out
}

// ratio is the throughput of x relative to base: base ns/op ÷ x ns/op
// (above 1, x is faster). 0 when either is unknown.
func ratio(base, x float64) float64 {
	if base <= 0 || x <= 0 {
		return 0
	}
	return base / x
}

func fmtNs(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

func fmtAllocs(x float64) string {
	if x == 0 {
		return "0"
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// fmtCell renders one table cell; baseline cells carry no ratio.
func fmtCell(s, base stat, ok, baseOK, isBase bool) string {
	switch {
	case !ok:
		return "–"
	case s.na:
		return "n/a"
	}
	c := fmtNs(s.ns) + " · " + fmtNs(s.cpu) + " · " + fmtAllocs(s.allocs)
	if isBase || !baseOK || base.na {
		return c
	}
	return fmt.Sprintf("%s (%.2f× · %.2f×)", c, ratio(base.ns, s.ns), ratio(base.cpu, s.cpu))
}

func mixLabel(m string) string { return strings.ReplaceAll(m, "-", "/") }

// render is the whole markdown report.
func render(o options, env machine, cells []cell) string {
	var b strings.Builder
	st := aggregate(cells)
	pf := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	pf("## Speed: tide side by side with its peers (cmd/speed)\n\n")
	pf("- **Command** (from bench/): `%s`\n", env.Command)
	thp := env.THP
	if thp == "" {
		thp = "not recorded"
	}
	pf("- **Machine**: %s, %s, nproc %d, %s; transparent huge pages: %s; GOMAXPROCS of the parent %d (each child sets GOMAXPROCS to its -cpu value); load average (1, 5, 15 min) at start %s, at end %s; %s, elapsed %s.\n",
		env.OS, env.CPU, env.CPUs, env.Go, thp, env.GOMAXPROCS, env.LoadStart, env.LoadEnd, env.Date, env.Elapsed)
	pf("- **Workload**: %d keys of %d B, %d B values, a Zipf 1.01 trace of %d operations (each goroutine from its own offset), the cache pre-filled, %s, no TTLs; %s; %d round(s), interleaved, one process per cache, -cpu value and round; -benchtime %s per loop; medians over rounds.\n",
		o.keys, bench.KeyLen, bench.ValueLen, bench.TraceLen, warmed(env.WarmReads), datasetShape(env.Dataset), o.rounds, o.benchtime)
	pf("- **Cells**: wall ns/op · CPU ns/op (user + system time of the child over the timed loop, GC included) · allocs/op; in parentheses the throughput relative to the table's first column (its ns/op ÷ this ns/op: at or above 1.00× is at least as fast), from wall and from CPU time. n/a: the cache has no such read path (tide View needs a zero-copy read in the engine).\n")
	if o.charts != "" {
		pf("- **Charts** (%s/speed-<group>-cpu<N>.svg, one under each table): the throughput relative to the table's first column (wall time, medians), per mix, one bar per cache and read path, with lines at the targets %.1f× (View) and %.1f× (Get).\n",
			chartLink(o, ""), targetView, targetGet)
	}
	if hot := overCores(o.cpus, env.CPUs); len(hot) > 0 {
		pf("- **Caveat**: -cpu %s exceed this machine's %d cores: those tables show behaviour under contention (more runnable goroutines than cores), **not scaling**.\n", joinInts(hot), env.CPUs)
	}
	if loaded(env.LoadStart, env.CPUs) || loaded(env.LoadEnd, env.CPUs) {
		pf("- **Caveat**: the machine was loaded (load average above its %d cores): wall times carry the other tenants' load; CPU times much less so.\n", env.CPUs)
	}
	var notes []string
	for _, f := range env.Failed {
		notes = append(notes, "**failed** (no figures): "+f)
	}
	for _, g := range o.groups {
		pf("\n### %s\n", g.title)
		for _, cpu := range o.cpus {
			pf("\n#### -cpu %d\n\n| mix |", cpu)
			for _, c := range g.cols {
				pf(" %s |", c.label)
			}
			pf("\n|---|")
			for range g.cols {
				pf("---:|")
			}
			pf("\n")
			for _, m := range bench.Mixes {
				bk := key{g.cols[0].cache, g.cols[0].path.String(), m.Name, cpu}
				base, baseOK := st[bk]
				pf("| %s |", mixLabel(m.Name))
				for i, c := range g.cols {
					k := key{c.cache, c.path.String(), m.Name, cpu}
					s, ok := st[k]
					pf(" %s |", fmtCell(s, base, ok, baseOK, i == 0))
					if ok && !s.na && s.hit < 99.95 {
						notes = append(notes, fmt.Sprintf("%s, %s, %s, -cpu %d: %.2f%% of reads hit", g.name, c.label, mixLabel(m.Name), cpu, s.hit))
					}
				}
				pf("\n")
			}
			if o.charts != "" {
				pf("\n![%s, -cpu %d: throughput relative to %s](%s)\n", g.name, cpu, g.cols[0].label, chartLink(o, chartName(g, cpu)))
			}
		}
	}
	for _, c := range cells {
		if c.Resident >= 0 && c.Resident < c.Keys {
			notes = append(notes, fmt.Sprintf("%s held %d of %d keys after the fill (-cpu %d, round %d)", c.Cache, c.Resident, c.Keys, c.CPU, c.Round+1))
		}
	}
	if len(notes) > 0 {
		pf("\nNotes:\n\n")
		for _, n := range notes {
			pf("- %s\n", n)
		}
	}
	return b.String()
}

// overCores returns the -cpu values above the machine's core count.
func overCores(cpus []int, cores int) []int {
	var out []int
	for _, c := range cpus {
		if c > cores {
			out = append(out, c)
		}
	}
	return out
}

// loaded reports whether a /proc/loadavg triple's 1-minute figure exceeds
// the core count.
func loaded(avg string, cores int) bool {
	f := strings.Fields(avg)
	if len(f) == 0 {
		return false
	}
	x, err := strconv.ParseFloat(f[0], 64)
	return err == nil && x > float64(cores)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// warmed says how the children warmed their caches before timing.
func warmed(reads int) string {
	if reads == 0 {
		return "then timed at once"
	}
	return fmt.Sprintf("then read untimed (%d reads of the trace, one goroutine: bench.Warm)", reads)
}

// datasetShape says how the cache was given its keys and values
// (bench.Dataset), from the run's record: "" is a run made before the
// dataset was recorded, which used the shared one.
func datasetShape(dataset string) string {
	switch dataset {
	case "own":
		return "each entry's value in memory of its own, reads looking up with copies of the keys the cache was given (as requests build keys anew), and each write a fresh copy of a value (as an application hands over a value it has just made)"
	case "shared":
		return "-shared: every entry's value one slice, handed over by every write, and reads looking up with the strings the cache was given (the dataset of the runs before the eleventh pass of issue 16)"
	}
	return "every entry's value one slice, handed over by every write, and reads looking up with the strings the cache was given (the dataset of the runs before the eleventh pass of issue 16, which did not record it)"
}
