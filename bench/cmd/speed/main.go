// Command speed measures tide's read and write speed side by side with its
// peers in the two configurations users run:
//
//   - bounded: a cap of 1.5× the key space (bench.CappedHeadroom) — tide
//     with MaxBytes and bench.RecommendedPolicy, otter with MaximumSize,
//     ristretto, theine (bench.CappedPeers);
//   - unbounded: tide with engine.Config{} vs go-cache;
//
// on 1M keys of 16 B with 64 B values, a Zipf 1.01 trace, the cache
// pre-filled, read/write mixes 100/0, 90/10, 75/25 and 50/50, and, for
// tide, three read paths: Get (a fresh copy), AppendGet (into a reused
// buffer) and the zero-copy View (bench.Viewer; "n/a" while the adapter
// has none).
//
// Every cell (one cache at one -cpu value in one round) runs in its own
// child process, so caches never share a heap or a GC; rounds interleave
// the caches in time (the order rotates every round) and the tables give
// medians over rounds of wall ns/op, CPU ns/op (getrusage of the child
// over the timed loop, GC included) and allocs/op, with throughput ratios
// against otter (bounded) and go-cache (unbounded). With -charts, a
// grouped bar chart per table (speed-<group>-cpu<N>.svg) plots those
// throughput ratios per mix, with lines at the targets (View ≥ 1.0×,
// Get ≥ 0.9×); -from redraws the report and the charts from a recorded
// run's JSON without measuring.
//
//	go run ./cmd/speed                         # -cpu 1,2, 3 rounds: ~7 minutes on 2 loaded cores
//	go run ./cmd/speed -cpu 1,2 -rounds 3 -out results/speed.json -md results/speed.md -charts charts
//	go run ./cmd/speed -from results/speed.json -md results/speed.md -charts charts
//	go run ./cmd/speed -quick                  # CI smoke: toy sizes, one round, seconds
//
// To see where one cache spends a cell's time, run the child alone with a
// CPU profile of its timed loops (-mixes picks the mixes):
//
//	go run ./cmd/speed -child -cache tide-capped -paths View -cpu 1 -mixes 50-50 -benchtime 4s -cpuprofile /tmp/cpu.out
//	go tool pprof -top /tmp/cpu.out
//
// -cpu values above the machine's core count show how a cache behaves
// under contention (more runnable goroutines than cores), not how it
// scales; the output says so.
//
// Run it from bench/.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/bench"
)

func main() {
	o, err := parseArgs(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "speed:", err)
		os.Exit(2)
	}
	if o.child {
		cell, err := runCell(o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "speed:", err)
			os.Exit(1)
		}
		b, _ := json.Marshal(cell)
		fmt.Println(string(b))
		return
	}
	run := func() error { return runParent(o, os.Args[1:], os.Stdout) }
	if o.from != "" {
		run = func() error { return runFrom(o, os.Stdout) }
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "speed:", err)
		os.Exit(1)
	}
}

// options are the parsed command line.
type options struct {
	cpus      []int
	rounds    int
	keys      int
	benchtime string
	groups    []group
	quick     bool
	out, md   string
	charts    string // directory of the SVG charts ("": none)
	from      string // a recorded run's JSON to report on instead of measuring

	// child mode: one cell.
	child bool
	cache string
	cpu   int
	round int
	mixes []bench.Mix // the mixes a child times (all by default)
	prof  string      // write a CPU profile of the child's timed loops here
	paths []bench.ReadPath

	shared bool // the dataset of the runs before the eleventh pass (bench.Dataset.Shared)
}

// warmReads is how many reads per key of the key space each child makes
// (bench.Warm, untimed, one goroutine) between the fill and its first
// timed loop.
const warmReads = 2

// Errors of parseArgs.
var (
	errBadCPU   = errors.New("bad -cpu list")
	errBadArg   = errors.New("bad argument")
	errBadGroup = errors.New("unknown group")
	errBadPath  = errors.New("unknown read path")
	errBadFrom  = errors.New("bad -from run")
)

// measureFlags are the flags that shape or record a measurement; -from
// takes the settings from the recorded run and writes no JSON.
var measureFlags = []string{"cpu", "rounds", "keys", "benchtime", "groups", "quick", "out", "child", "cache", "round", "paths", "shared"}

func parseArgs(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("speed", flag.ContinueOnError)
	cpu := fs.String("cpu", "1,2", "comma-separated GOMAXPROCS values (1,2,4,8); values above the core count show contention, not scaling")
	fs.IntVar(&o.rounds, "rounds", 3, "interleaved rounds; tables give medians over rounds")
	fs.IntVar(&o.keys, "keys", 1_000_000, "keys in the key space")
	fs.StringVar(&o.benchtime, "benchtime", "400ms", "duration (or Nx count) of each timed loop, as go test -benchtime")
	grp := fs.String("groups", "bounded,unbounded", "configurations to run: bounded, unbounded")
	fs.BoolVar(&o.quick, "quick", false, "CI smoke: 20000 keys, one round, -benchtime 200x (unless set explicitly)")
	fs.StringVar(&o.out, "out", "", "write every cell and the environment (JSON) here")
	fs.StringVar(&o.md, "md", "", "also write the markdown report here")
	fs.StringVar(&o.charts, "charts", "", "write an SVG chart per table (speed-<group>-cpu<N>.svg) into this directory")
	fs.StringVar(&o.from, "from", "", "report on this recorded run (the JSON of -out) instead of measuring; its settings come from its recorded command")
	fs.BoolVar(&o.child, "child", false, "internal: measure one cell and print it as JSON")
	fs.StringVar(&o.cache, "cache", "", "internal (-child): the cache (a bench peer name)")
	fs.IntVar(&o.round, "round", 0, "internal (-child): the round")
	paths := fs.String("paths", "AppendGet", "internal (-child): read paths (Get, AppendGet, View)")
	mixes := fs.String("mixes", "", "with -child: only these mixes (e.g. 90-10,50-50; default all)")
	fs.BoolVar(&o.shared, "shared", false, "the dataset of the runs before the eleventh pass: one value slice for every entry, reads looking up with the strings the cache was given (for comparison with them)")
	fs.StringVar(&o.prof, "cpuprofile", "", "with -child: write a CPU profile of the timed loops to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected %q", errBadArg, fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.from != "" {
		for _, f := range measureFlags {
			if set[f] {
				return o, fmt.Errorf("%w: -%s with -from (the recorded run's settings apply)", errBadArg, f)
			}
		}
	}
	if o.quick {
		if !set["keys"] {
			o.keys = 20_000
		}
		if !set["rounds"] {
			o.rounds = 1
		}
		if !set["benchtime"] {
			o.benchtime = "200x"
		}
	}
	var err error
	if o.cpus, err = parseCPUs(*cpu); err != nil {
		return o, err
	}
	if o.rounds < 1 || o.keys < 1 {
		return o, fmt.Errorf("%w: -rounds %d and -keys %d must be ≥ 1", errBadArg, o.rounds, o.keys)
	}
	if !validBenchtime(o.benchtime) {
		return o, fmt.Errorf("%w: -benchtime %q (want a duration such as 400ms or a count such as 200x)", errBadArg, o.benchtime)
	}
	for _, g := range bench.SplitComma(*grp) {
		i := slices.IndexFunc(groups, func(x group) bool { return x.name == g })
		if i < 0 {
			return o, fmt.Errorf("%w %q (have bounded, unbounded)", errBadGroup, g)
		}
		o.groups = append(o.groups, groups[i])
	}
	if len(o.groups) == 0 {
		return o, fmt.Errorf("%w: no -groups", errBadGroup)
	}
	for _, p := range bench.SplitComma(*paths) {
		i := slices.IndexFunc(bench.ReadPaths, func(x bench.ReadPath) bool { return x.String() == p })
		if i < 0 {
			return o, fmt.Errorf("%w %q (have Get, AppendGet, View)", errBadPath, p)
		}
		o.paths = append(o.paths, bench.ReadPaths[i])
	}
	o.mixes = bench.Mixes
	if *mixes != "" {
		o.mixes = nil
		for _, m := range bench.SplitComma(*mixes) {
			i := slices.IndexFunc(bench.Mixes, func(x bench.Mix) bool { return x.Name == m })
			if i < 0 {
				return o, fmt.Errorf("%w: unknown mix %q", errBadArg, m)
			}
			o.mixes = append(o.mixes, bench.Mixes[i])
		}
	}
	if !o.child && (*mixes != "" || o.prof != "") {
		return o, fmt.Errorf("%w: -mixes and -cpuprofile go with -child (a report needs every mix)", errBadArg)
	}
	if o.child {
		if _, err := bench.Lookup(o.cache); err != nil {
			return o, err
		}
		if len(o.cpus) != 1 {
			return o, fmt.Errorf("%w: -child takes one -cpu value, got %v", errBadCPU, o.cpus)
		}
		o.cpu = o.cpus[0]
	}
	return o, nil
}

// parseCPUs parses "1,2,4" into distinct values ≥ 1, in order.
func parseCPUs(s string) ([]int, error) {
	var out []int
	for _, f := range bench.SplitComma(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("%w %q: %q is not a count of 1..1024", errBadCPU, s, f)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty", errBadCPU)
	}
	return out, nil
}

func validBenchtime(s string) bool {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		c, err := strconv.Atoi(n)
		return err == nil && c > 0
	}
	d, err := time.ParseDuration(s)
	return err == nil && d > 0
}

// column is one column of a table: a cache read with one path.
type column struct {
	label string
	cache string // bench peer name
	path  bench.ReadPath
}

// group is one configuration: a table per -cpu value whose ratios are
// against its first column.
type group struct {
	name  string
	title string
	cols  []column
}

var groups = []group{
	{
		name:  "bounded",
		title: fmt.Sprintf("bounded at %g× the key space (tide: MaxBytes, %s; otter: MaximumSize)", bench.CappedHeadroom, bench.RecommendedPolicy.Name),
		cols: []column{
			{"otter", "otter-capped", bench.ReadAppend},
			{"otter (sync)", "otter-capped-sync", bench.ReadAppend},
			{"ristretto", "ristretto-capped", bench.ReadAppend},
			{"theine", "theine-capped", bench.ReadAppend},
			{"tide Get", "tide-capped", bench.ReadCopy},
			{"tide AppendGet", "tide-capped", bench.ReadAppend},
			{"tide View", "tide-capped", bench.ReadView},
			// A cap of exactly the data: no room to spare, so every
			// read reaches the policy (at 1.5×, the engine has room
			// and hands it one read in 16).
			{"tide View (cap = data)", "tide-exact", bench.ReadView},
		},
	},
	{
		name:  "unbounded",
		title: "unbounded (tide: engine.Config{}; go-cache: one RWMutex over a map)",
		cols: []column{
			{"go-cache", "go-cache", bench.ReadAppend},
			{"tide Get", "tide", bench.ReadCopy},
			{"tide AppendGet", "tide", bench.ReadAppend},
			{"tide View", "tide", bench.ReadView},
		},
	},
}

// job is one child process: a cache, its read paths, one -cpu value, one
// round.
type job struct {
	cache string
	paths []bench.ReadPath
	cpu   int
	round int
}

// plan lists the children to run, round by round and -cpu value by -cpu
// value; within one, every cache once, the order rotated by the round so
// that no cache always runs first (or right after the same neighbour).
func plan(gs []group, cpus []int, rounds int) []job {
	var caches []string
	paths := map[string][]bench.ReadPath{}
	for _, g := range gs {
		for _, c := range g.cols {
			if !slices.Contains(caches, c.cache) {
				caches = append(caches, c.cache)
			}
			if !slices.Contains(paths[c.cache], c.path) {
				paths[c.cache] = append(paths[c.cache], c.path)
			}
		}
	}
	var jobs []job
	for r := range rounds {
		for _, cpu := range cpus {
			for i := range caches {
				c := caches[(i+r)%len(caches)]
				jobs = append(jobs, job{cache: c, paths: paths[c], cpu: cpu, round: r})
			}
		}
	}
	return jobs
}

// childArgs are the arguments of the child that runs j.
func childArgs(o options, j job) []string {
	ps := make([]string, len(j.paths))
	for i, p := range j.paths {
		ps[i] = p.String()
	}
	args := []string{"-child", "-cache", j.cache, "-cpu", strconv.Itoa(j.cpu), "-round", strconv.Itoa(j.round),
		"-keys", strconv.Itoa(o.keys), "-benchtime", o.benchtime, "-paths", strings.Join(ps, ",")}
	if o.shared {
		args = append(args, "-shared")
	}
	return args
}

// cell is what a child measures: one cache at one -cpu value in one
// round, every mix and read path.
type cell struct {
	Cache    string   `json:"cache"`
	CPU      int      `json:"cpu"`
	Round    int      `json:"round"`
	Keys     int      `json:"keys"`
	Resident int      `json:"resident"` // Len after the fill (-1: the cache cannot tell)
	Results  []result `json:"results"`
}

// result is one timed loop of a cell.
type result struct {
	Mix      string  `json:"mix"`
	Path     string  `json:"path"`
	NA       bool    `json:"na,omitempty"` // the cache has no such read path
	N        int     `json:"n,omitempty"`
	NsOp     float64 `json:"ns_op,omitempty"`
	CPUNsOp  float64 `json:"cpu_ns_op,omitempty"`
	AllocsOp float64 `json:"allocs_op,omitempty"`
	HitPct   float64 `json:"hit_pct,omitempty"`
}

// runCell is the child: build and pre-fill the cache, then time every mix
// with every read path.
func runCell(o options) (cell, error) {
	runtime.GOMAXPROCS(o.cpu)
	p, err := bench.Lookup(o.cache)
	if err != nil {
		return cell{}, err
	}
	// testing.Benchmark reads -test.benchtime; outside a test binary the
	// flag exists only after testing.Init.
	testing.Init()
	if err := flag.CommandLine.Set("test.benchtime", o.benchtime); err != nil {
		return cell{}, err
	}
	d := bench.Throughput(o.keys)
	if o.shared {
		d = d.Shared()
	}
	c := p.New(bench.Options{Entries: o.keys, KeyLen: bench.KeyLen, ValueLen: bench.ValueLen})
	defer c.Close()
	bench.Fill(c, d.Stored, d.Values, false)
	bench.Warm(c, d, warmReads*o.keys)
	out := cell{Cache: o.cache, CPU: o.cpu, Round: o.round, Keys: o.keys, Resident: c.Len()}
	runtime.GC()
	if o.prof != "" {
		f, err := os.Create(o.prof)
		if err != nil {
			return out, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return out, err
		}
		defer pprof.StopCPUProfile()
	}
	for _, m := range o.mixes {
		for _, path := range o.paths {
			r := result{Mix: m.Name, Path: path.String()}
			if !bench.Supports(c, path) {
				r.NA = true
				out.Results = append(out.Results, r)
				continue
			}
			br := testing.Benchmark(func(b *testing.B) { bench.RunMix(b, c, d, d.Keys, m.Write, false, path) })
			if br.N == 0 {
				return out, fmt.Errorf("%s %s %s: the benchmark failed", o.cache, m.Name, path)
			}
			r.N = br.N
			r.NsOp = float64(br.T.Nanoseconds()) / float64(br.N)
			r.CPUNsOp = br.Extra["cpu-ns/op"]
			r.AllocsOp = br.Extra["allocs/op"] // RunMix's: the cache's own
			r.HitPct = br.Extra["hit%"]
			out.Results = append(out.Results, r)
		}
	}
	return out, nil
}

// runParent runs every child of the plan and writes the report to w.
func runParent(o options, args []string, w io.Writer) error {
	env := machine{Env: bench.Environment(), GOMAXPROCS: runtime.GOMAXPROCS(0), WarmReads: warmReads * o.keys, LoadStart: bench.LoadAvg(),
		Command: commandLine(args), Dataset: "own"}
	if o.shared {
		env.Dataset = "shared"
	}
	jobs := plan(o.groups, o.cpus, o.rounds)
	var cells []cell
	start := time.Now()
	for i, j := range jobs {
		t := time.Now()
		var c cell
		line, err := bench.RunChild(childArgs(o, j))
		if err == nil {
			err = json.Unmarshal(line, &c)
		}
		if err != nil {
			// One failed cell is reported and leaves a gap ("–") in the
			// tables; the rest of a long run still counts.
			f := fmt.Sprintf("%s -cpu %d round %d: %v", j.cache, j.cpu, j.round+1, err)
			fmt.Fprintln(os.Stderr, "speed: failed:", f)
			env.Failed = append(env.Failed, f)
			continue
		}
		cells = append(cells, c)
		fmt.Fprintf(os.Stderr, "speed: %d/%d %s -cpu %d round %d: %v\n", i+1, len(jobs), j.cache, j.cpu, j.round+1, time.Since(t).Round(time.Millisecond))
	}
	env.LoadEnd = bench.LoadAvg()
	env.Elapsed = time.Since(start).Round(time.Second).String()
	if err := publish(o, env, cells, w); err != nil {
		return err
	}
	if len(env.Failed) > 0 {
		return fmt.Errorf("%d of %d cells failed", len(env.Failed), len(jobs))
	}
	return nil
}

// publish writes the report of a run: the markdown to w and o.md, the
// charts into o.charts, the cells to o.out.
func publish(o options, env machine, cells []cell, w io.Writer) error {
	md := render(o, env, cells)
	if _, err := io.WriteString(w, md); err != nil {
		return err
	}
	if o.md != "" {
		if err := os.WriteFile(o.md, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if o.charts != "" {
		if err := writeCharts(o, cells); err != nil {
			return err
		}
	}
	if o.out != "" {
		if err := bench.WriteJSON(o.out, struct {
			Env   machine `json:"env"`
			Cells []cell  `json:"cells"`
		}{env, cells}); err != nil {
			return err
		}
	}
	return nil
}

// runFrom reports on the run recorded in o.from, with the settings of its
// recorded command, into o.md and o.charts.
func runFrom(o options, w io.Writer) error {
	b, err := os.ReadFile(o.from)
	if err != nil {
		return err
	}
	var run struct {
		Env   machine `json:"env"`
		Cells []cell  `json:"cells"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		return fmt.Errorf("%w %s: %v", errBadFrom, o.from, err)
	}
	args, err := recordedArgs(run.Env.Command)
	if err != nil {
		return fmt.Errorf("%w %s: %v", errBadFrom, o.from, err)
	}
	ro, err := parseArgs(args)
	if err != nil {
		return fmt.Errorf("%w %s: its command: %v", errBadFrom, o.from, err)
	}
	ro.out, ro.md, ro.charts = "", o.md, o.charts
	return publish(ro, run.Env, run.Cells, w)
}

// recordedArgs are the arguments of a command line written by
// commandLine.
func recordedArgs(cmd string) ([]string, error) {
	const prefix = "go run ./cmd/speed"
	rest, ok := strings.CutPrefix(cmd, prefix)
	if !ok || (rest != "" && rest[0] != ' ') {
		return nil, fmt.Errorf("recorded command %q does not start with %q", cmd, prefix)
	}
	var args []string
	for rest = strings.TrimLeft(rest, " "); rest != ""; rest = strings.TrimLeft(rest, " ") {
		if rest[0] == '"' {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("recorded command %q: %v", cmd, err)
			}
			a, _ := strconv.Unquote(q)
			args = append(args, a)
			rest = rest[len(q):]
			continue
		}
		a, r, _ := strings.Cut(rest, " ")
		args = append(args, a)
		rest = r
	}
	return args, nil
}

// machine is what the report says about the run's machine.
type machine struct {
	bench.Env
	GOMAXPROCS int    `json:"gomaxprocs"` // of the parent; each child sets its -cpu value
	LoadStart  string `json:"load_start"`
	LoadEnd    string `json:"load_end"`
	Command    string `json:"command"`
	Elapsed    string `json:"elapsed"`
	// WarmReads is how many untimed reads each child made after the fill
	// (warmReads × keys; absent from runs made before there were any).
	WarmReads int `json:"warm_reads,omitempty"`
	// Failed lists the cells whose child failed (their figures are absent).
	Failed []string `json:"failed,omitempty"`
	// Dataset is "own" (bench.Dataset) or "shared" (-shared); absent from
	// runs made before it was recorded, which used the shared dataset.
	Dataset string `json:"dataset,omitempty"`
}

// commandLine is the command that reproduces the run, from bench/.
func commandLine(args []string) string {
	parts := []string{"go", "run", "./cmd/speed"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$\\*?;&|<>()") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
