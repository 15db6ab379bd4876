// Command runall regenerates every result of bench/README.md in one go:
// the throughput and miss benchmarks, memory overhead, GC cost, expiry
// reclamation and expiry cost (each heap measurement one process per
// peer), then the tables and charts; and the capped configurations: the
// speed comparison (cmd/speed, results/speed.md) and their memory
// overhead with the exact-capacity check (results/memory-capped.json);
// and the durability log's costs (write throughput per fsync policy,
// recovery time and heap, writer stall during a rewrite:
// results/durability.txt, figures in docs/DURABILITY.md).
//
//	go run ./cmd/runall            # full run, 35-75 minutes; writes results/, charts/, README.md
//	go run ./cmd/runall -quick     # CI smoke: every workload at toy sizes, under 2 minutes; writes to a temp dir
//
// Run it from bench/.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tidekv/tide/bench"
)

func main() {
	quick := flag.Bool("quick", false, "CI smoke: toy sizes, results in a temporary directory")
	rounds := flag.Int("rounds", 2, "interleaved throughput repetitions")
	benchtime := flag.String("benchtime", "400ms", "go test -benchtime per throughput benchmark")
	cpu := flag.String("cpu", "1,2", "go test -cpu list")
	skip := flag.String("skip", "", "comma-separated steps to skip: throughput,memory,gc,expiry,cost,capped,speed,durability,report")
	flag.Parse()

	res, charts, readme := "results", "charts", "README.md"
	keys, memN, gcN, gcReps, expN, tail, scale, costRes, costReps, settle := "1000000", "1000000", "5000000", "5", "1000000", "6s", "1", "1000000", "5", "1.5s"
	if *quick {
		dir, err := os.MkdirTemp("", "tide-bench-smoke-")
		check(err)
		res, charts, readme = dir, filepath.Join(dir, "charts"), ""
		*rounds, *benchtime, *cpu = 1, "20x", "2"
		keys, memN, gcN, gcReps, expN, tail, scale, costRes, costReps, settle = "20000", "20000", "50000", "2", "20000", "1s", "0.1", "20000", "1", "200ms"
		fmt.Fprintln(os.Stderr, "smoke results in", dir)
	}
	check(os.MkdirAll(res, 0o755))
	skipped := func(s string) bool {
		for _, x := range bench.SplitComma(*skip) {
			if x == s {
				return true
			}
		}
		return false
	}
	start := time.Now()
	if !skipped("throughput") {
		f, err := os.Create(filepath.Join(res, "throughput.txt"))
		check(err)
		run(io.MultiWriter(f, os.Stdout), "go", "test", "-run", "^$", "-bench", "^(BenchmarkThroughput|BenchmarkMiss)$",
			"-cpu", *cpu, "-benchtime", *benchtime, "-timeout", "3h", ".", "-args", "-keys", keys, "-rounds", fmt.Sprint(*rounds))
		f.Close()
		// The tide op micro-benchmarks (not in the tables), so they cannot rot.
		if *quick {
			run(os.Stdout, "go", "test", "-run", "^$", "-bench", "^BenchmarkTideOps$", "-benchtime", "20x", ".", "-args", "-keys", keys)
		}
	}
	if !skipped("memory") {
		run(os.Stdout, "go", "run", "./cmd/memory", "-peer", "all", "-n", memN, "-out", filepath.Join(res, "memory.json"))
	}
	if !skipped("gc") {
		run(os.Stdout, "go", "run", "./cmd/memory", "-peer", "all", "-n", gcN, "-gc", gcReps, "-out", filepath.Join(res, "gc.json"))
	}
	if !skipped("expiry") {
		run(os.Stdout, "go", "run", "./cmd/expiry", "-peer", "all", "-n", expN, "-tail", tail, "-scale", scale, "-out", filepath.Join(res, "expiry.json"))
	}
	if !skipped("cost") {
		run(os.Stdout, "go", "run", "./cmd/expiry", "-peer", "all", "-cost", "-resident", costRes, "-reps", costReps, "-settle", settle, "-out", filepath.Join(res, "expirecost.json"))
	}
	if !skipped("capped") {
		run(os.Stdout, "go", "run", "./cmd/memory", "-peer", "tide,tide-capped,tide-exact,otter,otter-capped,freecache", "-n", memN, "-out", filepath.Join(res, "memory-capped.json"))
	}
	if !skipped("speed") {
		args := []string{"run", "./cmd/speed", "-cpu", *cpu, "-rounds", fmt.Sprint(*rounds), "-out", filepath.Join(res, "speed.json"), "-md", filepath.Join(res, "speed.md"), "-charts", charts}
		if *quick {
			args = append(args, "-quick")
		}
		run(os.Stdout, "go", args...)
	}
	if !skipped("durability") {
		f, err := os.Create(filepath.Join(res, "durability.txt"))
		check(err)
		bt, n := "3x", "1000000"
		if *quick {
			bt, n = "1x", "20000"
		}
		run(io.MultiWriter(f, os.Stdout), "go", "test", "-run", "^$", "-bench", "^BenchmarkDurable", "-benchtime", bt, "-timeout", "1h", ".", "-args", "-keys", n)
		f.Close()
	}
	if !skipped("report") {
		args := []string{"run", "./cmd/report", "-results", res, "-charts", charts, "-out", filepath.Join(res, "REPORT.md")}
		if readme != "" {
			args = append(args, "-readme", readme)
		}
		run(io.Discard, "go", args...)
	}
	fmt.Fprintf(os.Stderr, "runall: done in %v\n", time.Since(start).Round(time.Second))
}

func run(stdout io.Writer, name string, args ...string) {
	fmt.Fprintf(os.Stderr, "runall: %s %v\n", name, args)
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	check(cmd.Run())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "runall:", err)
		os.Exit(1)
	}
}
