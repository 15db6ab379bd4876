package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidekv/tide/bench"
)

// childEnv makes the test binary act as the speed command, so that the
// parent can re-execute it as its children (os.Args[0]).
const childEnv = "TIDE_SPEED_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr error
		check   func(t *testing.T, o options)
	}{
		{"defaults", nil, nil, func(t *testing.T, o options) {
			if !slices.Equal(o.cpus, []int{1, 2}) || o.rounds != 3 || o.keys != 1_000_000 || o.benchtime != "400ms" || len(o.groups) != 2 || o.child ||
				len(o.mixes) != len(bench.Mixes) || o.prof != "" {
				t.Errorf("defaults = %+v", o)
			}
		}},
		{"quick sets toy sizes", []string{"-quick"}, nil, func(t *testing.T, o options) {
			if o.keys != 20_000 || o.rounds != 1 || o.benchtime != "200x" {
				t.Errorf("quick = keys %d rounds %d benchtime %q", o.keys, o.rounds, o.benchtime)
			}
		}},
		{"quick keeps explicit values", []string{"-quick", "-keys", "500", "-rounds", "2", "-benchtime", "1s"}, nil, func(t *testing.T, o options) {
			if o.keys != 500 || o.rounds != 2 || o.benchtime != "1s" {
				t.Errorf("quick with explicit flags = keys %d rounds %d benchtime %q", o.keys, o.rounds, o.benchtime)
			}
		}},
		{"cpu list deduplicated in order", []string{"-cpu", "2,1,2,8"}, nil, func(t *testing.T, o options) {
			if !slices.Equal(o.cpus, []int{2, 1, 8}) {
				t.Errorf("cpus = %v", o.cpus)
			}
		}},
		{"one group", []string{"-groups", "unbounded"}, nil, func(t *testing.T, o options) {
			if len(o.groups) != 1 || o.groups[0].name != "unbounded" {
				t.Errorf("groups = %v", o.groups)
			}
		}},
		{"cpu zero", []string{"-cpu", "0"}, errBadCPU, nil},
		{"cpu not a number", []string{"-cpu", "1,two"}, errBadCPU, nil},
		{"cpu empty", []string{"-cpu", ","}, errBadCPU, nil},
		{"rounds zero", []string{"-rounds", "0"}, errBadArg, nil},
		{"bad benchtime", []string{"-benchtime", "fast"}, errBadArg, nil},
		{"zero count benchtime", []string{"-benchtime", "0x"}, errBadArg, nil},
		{"unknown group", []string{"-groups", "bounded,huge"}, errBadGroup, nil},
		{"unknown path", []string{"-paths", "Peek"}, errBadPath, nil},
		{"positional argument", []string{"extra"}, errBadArg, nil},
		{"child needs one cpu", []string{"-child", "-cache", "tide", "-cpu", "1,2"}, errBadCPU, nil},
		{"from takes the recorded settings", []string{"-from", "results/speed.json", "-md", "x.md", "-charts", "charts"}, nil, func(t *testing.T, o options) {
			if o.from != "results/speed.json" || o.md != "x.md" || o.charts != "charts" {
				t.Errorf("from = %+v", o)
			}
		}},
		{"from with a measurement flag", []string{"-from", "results/speed.json", "-cpu", "4"}, errBadArg, nil},
		{"child mixes and profile", []string{"-child", "-cache", "tide", "-cpu", "1", "-mixes", "50-50,90-10", "-cpuprofile", "p.out"}, nil, func(t *testing.T, o options) {
			if len(o.mixes) != 2 || o.mixes[0].Name != "50-50" || o.mixes[1].Name != "90-10" || o.prof != "p.out" {
				t.Errorf("mixes = %v, prof = %q", o.mixes, o.prof)
			}
		}},
		{"unknown mix", []string{"-child", "-cache", "tide", "-cpu", "1", "-mixes", "60-40"}, errBadArg, nil},
		{"mixes without child", []string{"-mixes", "50-50"}, errBadArg, nil},
		{"profile without child", []string{"-cpuprofile", "p.out"}, errBadArg, nil},
		{"from with out", []string{"-from", "results/speed.json", "-out", "again.json"}, errBadArg, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseArgs(tt.args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("parseArgs(%q) error = %v, want %v", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs(%q): %v", tt.args, err)
			}
			tt.check(t, o)
		})
	}
	if _, err := parseArgs([]string{"-child", "-cache", "no-such-cache"}); err == nil {
		t.Error("parseArgs accepted a child of an unknown cache")
	}
}

func TestPlanRunsEveryCellOnceAndRotates(t *testing.T) {
	jobs := plan(groups, []int{1, 2}, 3)
	caches := []string{"otter-capped", "otter-capped-sync", "ristretto-capped", "theine-capped", "tide-capped", "tide-exact", "go-cache", "tide"}
	if len(jobs) != len(caches)*2*3 {
		t.Fatalf("%d jobs, want %d", len(jobs), len(caches)*2*3)
	}
	type cellID struct {
		cache      string
		cpu, round int
	}
	seen := map[cellID]bool{}
	for _, j := range jobs {
		k := cellID{j.cache, j.cpu, j.round}
		if seen[k] {
			t.Errorf("cell %+v planned twice", k)
		}
		seen[k] = true
	}
	for r := range 3 {
		if first := jobs[r*len(caches)*2].cache; first != caches[r] {
			t.Errorf("round %d starts with %s, want %s (rotation)", r, first, caches[r])
		}
	}
	for _, j := range jobs {
		want := []bench.ReadPath{bench.ReadAppend}
		switch {
		case j.cache == "tide-exact":
			want = []bench.ReadPath{bench.ReadView}
		case strings.HasPrefix(j.cache, "tide"):
			want = []bench.ReadPath{bench.ReadCopy, bench.ReadAppend, bench.ReadView}
		}
		if !slices.Equal(j.paths, want) {
			t.Errorf("%s paths = %v, want %v", j.cache, j.paths, want)
		}
	}
}

func TestChildArgsRoundTrip(t *testing.T) {
	o, err := parseArgs([]string{"-keys", "1234", "-benchtime", "7x"})
	if err != nil {
		t.Fatal(err)
	}
	j := job{cache: "tide-capped", paths: []bench.ReadPath{bench.ReadCopy, bench.ReadView}, cpu: 8, round: 4}
	c, err := parseArgs(childArgs(o, j))
	if err != nil {
		t.Fatalf("the child rejects its arguments %q: %v", childArgs(o, j), err)
	}
	if !c.child || c.cache != j.cache || c.cpu != 8 || c.round != 4 || c.keys != 1234 || c.benchtime != "7x" || !slices.Equal(c.paths, j.paths) || c.shared {
		t.Errorf("child options = %+v, want the job %+v", c, j)
	}
	o.shared = true
	if c, err := parseArgs(childArgs(o, j)); err != nil || !c.shared {
		t.Errorf("a -shared run's child: shared %v, err %v; want shared", c.shared, err)
	}
}

func TestAggregateTakesMediansOverRounds(t *testing.T) {
	cells := []cell{
		{Cache: "a", CPU: 1, Round: 0, Results: []result{{Mix: "100-0", Path: "AppendGet", NsOp: 300, CPUNsOp: 30, AllocsOp: 1, HitPct: 100}, {Mix: "100-0", Path: "View", NA: true}}},
		{Cache: "a", CPU: 1, Round: 1, Results: []result{{Mix: "100-0", Path: "AppendGet", NsOp: 100, CPUNsOp: 10, AllocsOp: 0, HitPct: 90}, {Mix: "100-0", Path: "View", NA: true}}},
		{Cache: "a", CPU: 1, Round: 2, Results: []result{{Mix: "100-0", Path: "AppendGet", NsOp: 200, CPUNsOp: 50, AllocsOp: 0, HitPct: 100}}},
		{Cache: "a", CPU: 2, Round: 0, Results: []result{{Mix: "100-0", Path: "AppendGet", NsOp: 10, CPUNsOp: 1}}},
		{Cache: "a", CPU: 2, Round: 1, Results: []result{{Mix: "100-0", Path: "AppendGet", NsOp: 20, CPUNsOp: 4}}},
	}
	st := aggregate(cells)
	if s := st[key{"a", "AppendGet", "100-0", 1}]; s.ns != 200 || s.cpu != 30 || s.allocs != 0 || s.hit != 100 || s.rounds != 3 || s.na {
		t.Errorf("odd rounds: %+v, want medians 200 ns, 30 cpu, 0 allocs, 100 hit over 3 rounds", s)
	}
	if s := st[key{"a", "AppendGet", "100-0", 2}]; s.ns != 15 || s.cpu != 2.5 || s.rounds != 2 {
		t.Errorf("even rounds: %+v, want 15 ns, 2.5 cpu over 2 rounds", s)
	}
	if s := st[key{"a", "View", "100-0", 1}]; !s.na {
		t.Errorf("n/a path: %+v, want na", s)
	}
}

func TestRatioIsThroughputRelativeToBaseline(t *testing.T) {
	for _, tt := range []struct{ base, x, want float64 }{
		{200, 100, 2}, {100, 200, 0.5}, {100, 100, 1}, {0, 100, 0}, {100, 0, 0},
	} {
		if got := ratio(tt.base, tt.x); got != tt.want {
			t.Errorf("ratio(%v, %v) = %v, want %v", tt.base, tt.x, got, tt.want)
		}
	}
}

func TestRender(t *testing.T) {
	o, err := parseArgs([]string{"-groups", "unbounded", "-cpu", "1,4", "-rounds", "1", "-keys", "10"})
	if err != nil {
		t.Fatal(err)
	}
	res := func(path string, ns, cpu, allocs, hit float64) result {
		return result{Mix: "100-0", Path: path, NsOp: ns, CPUNsOp: cpu, AllocsOp: allocs, HitPct: hit}
	}
	cells := []cell{
		{Cache: "go-cache", CPU: 1, Keys: 10, Resident: 10, Results: []result{res("AppendGet", 100, 110, 0, 100)}},
		{Cache: "tide", CPU: 1, Keys: 10, Resident: 9, Results: []result{res("Get", 200, 220, 1, 100), res("AppendGet", 50, 55, 0, 98.5), {Mix: "100-0", Path: "View", NA: true}}},
	}
	env := machine{Env: bench.Env{CPUs: 2}, LoadStart: "0.10 0.2 0.3", LoadEnd: "0.5 0.2 0.3", Command: "go run ./cmd/speed -cpu 1,4",
		Failed: []string{"go-cache -cpu 4 round 1: exit status 2"}}
	md := render(o, env, cells)
	for _, want := range []string{
		"`go run ./cmd/speed -cpu 1,4`",
		"nproc 2",
		"at start 0.10 0.2 0.3, at end 0.5 0.2 0.3",
		"-cpu 4 exceed this machine's 2 cores",
		"not scaling",
		"#### -cpu 1\n\n| mix | go-cache | tide Get | tide AppendGet | tide View |\n|---|---:|---:|---:|---:|\n",
		"| 100/0 | 100 · 110 · 0 | 200 · 220 · 1.00 (0.50× · 0.50×) | 50 · 55 · 0 (2.00× · 2.00×) | n/a |",
		"| 90/10 | – | – | – | – |",
		"unbounded, tide AppendGet, 100/0, -cpu 1: 98.50% of reads hit",
		"tide held 9 of 10 keys after the fill",
		"**failed** (no figures): go-cache -cpu 4 round 1: exit status 2",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "![") || strings.Contains(md, "Charts") {
		t.Errorf("report without -charts mentions charts:\n%s", md)
	}
	if strings.Contains(md, "was loaded") {
		t.Errorf("report calls a machine at load 0.5 on 2 cores loaded:\n%s", md)
	}
	env.LoadEnd = "3.5 1 1"
	if md := render(o, env, cells); !strings.Contains(md, "the machine was loaded") {
		t.Errorf("report does not flag a load of 3.5 on 2 cores:\n%s", md)
	}
	o.cpus = []int{1, 2}
	if md := render(o, env, cells); strings.Contains(md, "not scaling") {
		t.Errorf("report warns about contention with every -cpu within the cores:\n%s", md)
	}
}

// TestParentRunsChildren runs the real protocol at toy sizes: the parent
// re-executes this test binary (acting as the command) once per cache and
// round, and the children's JSON lines come back as cells.
func TestParentRunsChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	t.Setenv(childEnv, "1")
	out := filepath.Join(t.TempDir(), "speed.json")
	args := []string{"-groups", "unbounded", "-cpu", "1", "-rounds", "2", "-keys", "500", "-benchtime", "5x", "-out", out}
	o, err := parseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := runParent(o, args, &md); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Env   machine `json:"env"`
		Cells []cell  `json:"cells"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Cells) != 4 {
		t.Fatalf("%d cells, want 2 caches × 2 rounds", len(got.Cells))
	}
	for _, c := range got.Cells {
		wantPaths := 1
		if c.Cache == "tide" {
			wantPaths = 3
		}
		if c.Keys != 500 || c.Resident != 500 || len(c.Results) != wantPaths*len(bench.Mixes) {
			t.Errorf("cell %s round %d: keys %d resident %d, %d results, want 500, 500, %d", c.Cache, c.Round, c.Keys, c.Resident, len(c.Results), wantPaths*len(bench.Mixes))
		}
		for _, r := range c.Results {
			switch {
			case r.NA && r.Path != "View":
				t.Errorf("%s %s %s: n/a, but every cache has it", c.Cache, r.Mix, r.Path)
			case !r.NA && (r.N != 5 || r.NsOp <= 0):
				t.Errorf("%s %s %s: %+v, want 5 timed ops", c.Cache, r.Mix, r.Path, r)
			}
		}
	}
	if got.Env.Command != "go run ./cmd/speed "+strings.Join(args, " ") || got.Env.LoadEnd == "" {
		t.Errorf("env = %+v", got.Env)
	}
	if !strings.Contains(md.String(), "| 100/0 | ") {
		t.Errorf("no table in the report:\n%s", md.String())
	}
}

// A child that fails (here: the test binary, not acting as the command,
// rejects -child) is reported in the report and the JSON, and the run
// returns an error once every cell has been tried.
func TestParentReportsFailedChildren(t *testing.T) {
	t.Setenv(childEnv, "0")
	out := filepath.Join(t.TempDir(), "speed.json")
	args := []string{"-groups", "unbounded", "-cpu", "1", "-rounds", "1", "-keys", "10", "-benchtime", "1x", "-out", out}
	o, err := parseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := runParent(o, args, &md); err == nil || !strings.Contains(err.Error(), "2 of 2 cells failed") {
		t.Fatalf("runParent with failing children: %v, want 2 of 2 cells failed", err)
	}
	if !strings.Contains(md.String(), "**failed** (no figures): go-cache -cpu 1 round 1") ||
		!strings.Contains(md.String(), "**failed** (no figures): tide -cpu 1 round 1") {
		t.Errorf("report does not list the failed cells:\n%s", md.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Env machine `json:"env"`
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Env.Failed) != 2 {
		t.Errorf("JSON env.failed = %v (%v), want both cells", got.Env.Failed, err)
	}
}

// TestDatasetShapeFollowsTheRecord: the report says which dataset a run
// used from its record, and a run recorded before the field existed used
// the shared one.
func TestDatasetShapeFollowsTheRecord(t *testing.T) {
	for _, tc := range []struct{ dataset, want string }{
		{"own", "memory of its own"},
		{"shared", "-shared"},
		{"", "did not record it"},
	} {
		if got := datasetShape(tc.dataset); !strings.Contains(got, tc.want) {
			t.Errorf("datasetShape(%q) = %q, want it to say %q", tc.dataset, got, tc.want)
		}
	}
}
