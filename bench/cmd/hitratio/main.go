// Command hitratio regenerates tide's hit-ratio table (bench/HITRATIO.md)
// and charts (bench/charts/hitratio-<trace>.svg): every tide eviction policy
// and the peer caches on the same traces and capacities, the recommended
// policy (adaptive) also through a real engine, Bélády's OPT as the
// ceiling, plus the check of the exact LRU against the published
// reference numbers.
//
// Run from bench/:
//
//	go run ./cmd/hitratio                  # full table, writes the files
//	go run ./cmd/hitratio -quick           # a few seconds, prints to stdout
//	go run ./cmd/hitratio -traces oltp,loop -peers=false
//
// Traces are read from $TIDE_TRACES or ../shared/traces relative to the
// repository root (override with -dir).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/tidekv/tide/bench/sim"
)

func main() {
	var (
		traces  = flag.String("traces", "", "comma-separated trace names (default: all): "+names())
		quick   = flag.Bool("quick", false, "small capacities of the small traces only; print to stdout")
		peers   = flag.Bool("peers", true, "include the peer caches")
		runs    = flag.Int("runs", 8, "runs to average for otter, whose result varies between runs (random hash seed); at least (more on a short trace, see -engine-accesses)")
		slow    = flag.Int("slow-runs", 1, "runs to average for theine and ristretto (random seeds too, but slow: Wait after every Set)")
		engRuns = flag.Int("engine-runs", 8, "hash seeds to average for tide adaptive, alone and through the engine (whose seed is random); at least: with 3, the engine column of P3 and Corda+loop+Corda moved by up to 2 points from run to run")
		engAcc  = flag.Int("engine-accesses", 1_500_000, "on a short trace, more seeds (runs) for tide adaptive and otter, so that each of their cells averages at least this many accesses (up to sim.MaxSeedRuns)")
		opt     = flag.Bool("opt", true, "include Bélády's OPT (the clairvoyant ceiling)")
		workers = flag.Int("workers", 0, "parallel simulations (0 = 2×GOMAXPROCS: theine and ristretto spend time blocked in Wait)")
		dir     = flag.String("dir", "", "trace directory (default $"+sim.EnvTraces+" or <repo>/../shared/traces)")
		out     = flag.String("out", "", "markdown output (default <repo>/bench/HITRATIO.md; \"-\" = stdout; -quick defaults to stdout)")
		reuse   = flag.String("reuse", "", "an earlier report (HITRATIO.md) whose -reuse-cols columns are carried over instead of simulated again (for columns whose code did not change; the report says so)")
		reuseCl = flag.String("reuse-cols", "theine,ristretto,golang-lru,golang-lru 2Q,ttlcache,OPT,exact LRU", "the columns -reuse carries over (not otter by default: a carried column has no standard error, and the goals compare adaptive with otter)")
		charts  = flag.String("charts", "", "chart directory (default <repo>/bench/charts; \"none\" to skip; -quick defaults to none)")
	)
	flag.Parse()
	log.SetFlags(0)
	if *quick {
		*runs, *slow, *engRuns, *engAcc = 1, 1, 1, 0
	}
	if *workers <= 0 {
		*workers = 2 * runtime.GOMAXPROCS(0)
	}
	if *dir != "" {
		os.Setenv(sim.EnvTraces, *dir)
	}
	root, rootErr := sim.RepoRoot()
	if *out == "" {
		if *quick || rootErr != nil {
			*out = "-"
		} else {
			*out = filepath.Join(root, "bench", "HITRATIO.md")
		}
	}
	if *charts == "" {
		if *quick || rootErr != nil {
			*charts = "none"
		} else {
			*charts = filepath.Join(root, "bench", "charts")
		}
	}

	var selected []*sim.Trace
	for _, t := range sim.Traces {
		if *traces != "" && !contains(strings.Split(*traces, ","), t.Name) {
			continue
		}
		if *quick {
			if t.Quick == nil {
				continue
			}
			c := *t
			c.Caps = t.Quick
			selected = append(selected, &c)
			continue
		}
		selected = append(selected, t)
	}
	if len(selected) == 0 {
		log.Fatalf("hitratio: no trace selected (have %s)", names())
	}

	// contenders returns the contenders for a trace of n accesses: the
	// hash-seeded tide columns average over more seeds on a short trace,
	// whose hit ratio spreads over several points from seed to seed.
	contenders := func(n int) []sim.Contender {
		var cs []sim.Contender
		for _, c := range sim.TideContenders() {
			if c.Engine || c.NewSeeded != nil {
				c = sim.Averaged(c, seedRuns(*engRuns, *engAcc, n))
			}
			cs = append(cs, c)
		}
		if *opt {
			cs = append(cs, sim.OPTContender)
		}
		cs = append(cs, sim.LRUContender)
		if *peers {
			for _, p := range sim.Peers() {
				switch p.Name {
				case "otter":
					// otter's hash seed is random too: the same rule
					// as tide's seeded columns, so that the goals
					// compare means of equally many runs.
					p = sim.Averaged(p, seedRuns(*runs, *engAcc, n))
				case "theine", "ristretto":
					p = sim.Averaged(p, *slow)
				}
				cs = append(cs, p)
			}
		}
		return cs
	}

	var prev reused
	if *reuse != "" {
		var err error
		if prev, err = readReport(*reuse); err != nil {
			log.Fatalf("hitratio: -reuse: %v", err)
		}
	}
	carried := map[string]int{} // column → traces it was carried over for

	start := time.Now()
	var tables []*sim.Table
	for _, t := range selected {
		t0 := time.Now()
		keys, err := t.Keys()
		if err != nil && *quick && errors.Is(err, fs.ErrNotExist) {
			// A machine without the trace files (a fresh CI checkout) still
			// runs the simulator on the synthetic traces.
			log.Printf("%-10s skipped: %v (set -dir or $%s)", t.Name, err, sim.EnvTraces)
			continue
		}
		if err != nil {
			log.Fatalf("hitratio: %s: %v (set -dir or $%s)", t.Name, err, sim.EnvTraces)
		}
		cs := contenders(len(keys))
		tab := &sim.Table{Trace: t, Accesses: len(keys), Contenders: cs}
		// Simulate every column but those carried over from -reuse.
		var run []sim.Contender
		var runAt []int
		old := map[int][]float64{}
		for j, c := range cs {
			// A column this run averages over more runs than -runs
			// (otter on a short trace) is simulated again.
			if v, ok := prev.column(t.Name, c.Name, t.Caps); ok && contains(strings.Split(*reuseCl, ","), c.Name) && c.Runs <= max(*runs, *slow) {
				old[j] = v
				carried[c.Name]++
				continue
			}
			run = append(run, c)
			runAt = append(runAt, j)
		}
		res, se := sim.RunSE(keys, t.Caps, run, *workers)
		tab.Ratios = make([][]float64, len(t.Caps))
		tab.SE = make([][]float64, len(t.Caps))
		for i := range tab.Ratios {
			tab.Ratios[i] = make([]float64, len(cs))
			tab.SE[i] = make([]float64, len(cs))
			for j, v := range old {
				tab.Ratios[i][j] = v[i]
				tab.SE[i][j] = math.NaN() // a carried-over column's spread is not known
			}
			for k, j := range runAt {
				tab.Ratios[i][j], tab.SE[i][j] = res[i][k], se[i][k]
			}
		}
		tables = append(tables, tab)
		log.Printf("%-10s %9d accesses  %6.1fs", t.Name, len(keys), time.Since(t0).Seconds())
	}
	var ref []sim.RefRow
	if !*quick {
		ref = sim.ReferenceCheck(*workers)
	}

	var w io.Writer = os.Stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		w = f
	}
	cmd := "go run ./cmd/hitratio " + strings.Join(os.Args[1:], " ")
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	timing := fmt.Sprintf("%.0fs wall, %.0fs CPU, GOMAXPROCS=%d, %s", time.Since(start).Seconds(), cpu.Seconds(), runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02"))
	if len(carried) > 0 {
		var cols []string
		for _, name := range strings.Split(*reuseCl, ",") {
			if n := carried[name]; n > 0 {
				cols = append(cols, fmt.Sprintf("%s (%d of %d traces)", name, n, len(tables)))
			}
		}
		timing += fmt.Sprintf("; not simulated again but carried over from the earlier %s (-reuse, for code that did not change): %s", filepath.Base(*reuse), strings.Join(cols, ", "))
	}
	sim.WriteMarkdown(w, tables, ref, strings.TrimSpace(cmd), timing)
	if *charts != "none" {
		if err := os.MkdirAll(*charts, 0o755); err != nil {
			log.Fatal(err)
		}
		for _, tab := range tables {
			p := filepath.Join(*charts, "hitratio-"+tab.Trace.Name+".svg")
			if err := os.WriteFile(p, []byte(sim.SVG(tab)), 0o644); err != nil {
				log.Fatal(err)
			}
		}
	}
	log.Printf("total %.1fs", time.Since(start).Seconds())
}

func names() string {
	var n []string
	for _, t := range sim.Traces {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

// seedRuns is how many hash seeds a seeded column of a trace of n accesses
// averages: at least runs, and enough that they cover minAccesses
// accesses in all, up to sim.MaxSeedRuns.
//
// The goals compare cells of adaptive, otter and the engine within 0.1 to
// 0.5 points, so a cell's mean must be known closer than that. On the
// short LIRS traces one seed's hit ratio spreads wide (standard deviation
// over 1000 seeds on Glimpse at 750 entries: otter 2.2 points, tinylfu
// 2.2, adaptive 2.7; at 1000 entries 2.3–2.4; over 200 seeds multi1 at
// 1500 0.7, multi2 at 1000 0.4, Sprite at 100 0.24 over 16): with the
// earlier 300,000 accesses and 32 seeds at most, Glimpse's adaptive and
// otter cells were each uncertain by about 0.45 points (one standard
// error) and the difference of the two by 0.6, and Sprite's 3 seeds left
// 0.14 per cell. 1.5M accesses give Glimpse 250 seeds, multi1–3 95, 58
// and 50, Sprite 12; the long traces keep runs.
func seedRuns(runs, minAccesses, n int) int {
	if n <= 0 || minAccesses <= 0 {
		return runs
	}
	return max(runs, min(sim.MaxSeedRuns, (minAccesses+n-1)/n))
}
