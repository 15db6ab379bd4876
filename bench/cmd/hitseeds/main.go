// Command hitseeds prints one policy's hit ratio in the simulator, averaged
// over hash seeds, for chosen (trace, capacity) cells: the measure for a
// change whose effect is smaller than the spread between seeds (a sketch's
// size, a hash function). Each seed is one sim.NewSeededPolicyCache run.
//
//	go run ./cmd/hitseeds -policy tinylfu -seeds 8 -cells zipf099:5000,otterzipf:20000,glimpse:750
//
// With -perseed FILE it also writes every run's hit ratio (trace, capacity,
// seed, ratio; tab-separated), so that two builds of a policy can be
// compared seed by seed (paired: most of a short trace's spread is the
// seed's, common to both). With -against FILE, a -perseed file of an
// earlier build, each row also gives that build's mean over the same
// seeds, the mean paired difference (this build − that one), its standard
// error and how many seeds changed:
//
//	go run ./cmd/hitseeds -policy adaptive -seeds 300 -cells glimpse:750 -perseed /tmp/before.tsv
//	(change the policy)
//	go run ./cmd/hitseeds -policy adaptive -seeds 300 -cells glimpse:750 -against /tmp/before.tsv
//
// Traces are found as cmd/hitratio finds them (-dir or $TIDE_TRACES).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/tidekv/tide/bench/sim"
	"github.com/tidekv/tide/evict"
)

const defaultCells = "zipf099:5000,zipf099:10000,zipf099:50000,otterzipf:5000,otterzipf:20000,otterzipf:80000," +
	"glimpse:750,glimpse:1500,multi1:1500,multi2:1500,multi3:1500,sprite:1000,loop:750"

// perSeedDecimals is how many decimals of a hit ratio (in percent) a
// -perseed file keeps: far below a seed's spread (points) and the
// differences worth measuring (hundredths of a point).
const perSeedDecimals = 4

func main() {
	log.SetFlags(0)
	policy := flag.String("policy", "tinylfu", "eviction policy name (evict.Parse)")
	seeds := flag.Int("seeds", 8, "hash seeds 1..n to average")
	cells := flag.String("cells", defaultCells, "comma-separated trace:capacity cells")
	dir := flag.String("dir", "", "trace directory (default $"+sim.EnvTraces+")")
	perSeed := flag.String("perseed", "", "if set, a file to write each run's hit ratio to (trace, capacity, seed, ratio)")
	against := flag.String("against", "", "if set, a -perseed file of an earlier run to compare with, seed by seed")
	flag.Parse()
	if *seeds < 1 {
		log.Fatal("hitseeds: -seeds must be at least 1")
	}
	if *dir != "" {
		os.Setenv(sim.EnvTraces, *dir)
	}
	spec, err := evict.Parse(*policy)
	if err != nil {
		log.Fatalf("hitseeds: %v", err)
	}
	var out *os.File
	if *perSeed != "" {
		if out, err = os.Create(*perSeed); err != nil {
			log.Fatalf("hitseeds: %v", err)
		}
	}
	var before map[runKey]float64
	if *against != "" {
		f, err := os.Open(*against)
		if err != nil {
			log.Fatalf("hitseeds: %v", err)
		}
		before, err = readPerSeed(f)
		f.Close()
		if err != nil {
			log.Fatalf("hitseeds: %s: %v", *against, err)
		}
	}
	if before == nil {
		fmt.Printf("| trace | capacity | %s, mean of %d seeds | min | max |\n|---|---:|---:|---:|---:|\n", spec.Name, *seeds)
	} else {
		fmt.Printf("| trace | capacity | %s, mean of %d seeds | min | max | against | seeds | Δ | SE of Δ | seeds changed |\n"+
			"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", spec.Name, *seeds)
	}
	for _, cell := range strings.Split(*cells, ",") {
		name, c, ok := strings.Cut(cell, ":")
		capacity, err := strconv.Atoi(c)
		if !ok || err != nil || capacity < 1 {
			log.Fatalf("hitseeds: cell %q: want trace:capacity", cell)
		}
		keys, err := traceKeys(name)
		if err != nil {
			log.Fatalf("hitseeds: %s: %v", name, err)
		}
		ratios := make([]float64, *seeds)
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for s := range ratios {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				c := sim.NewSeededPolicyCache(spec, capacity, uint64(s+1))
				ratios[s] = sim.HitRatio(keys, c)
				if err := c.Err(); err != nil {
					log.Fatalf("hitseeds: %s %d seed %d: %v", name, capacity, s+1, err)
				}
			}()
		}
		wg.Wait()
		sum, lo, hi := 0.0, ratios[0], ratios[0]
		for _, r := range ratios {
			sum += r
			lo, hi = min(lo, r), max(hi, r)
		}
		fmt.Printf("| %s | %d | %.2f | %.2f | %.2f |", name, capacity, sum/float64(len(ratios)), lo, hi)
		if before != nil {
			var was, now []float64
			for s, r := range ratios {
				if b, ok := before[runKey{name, capacity, s + 1}]; ok {
					// Rounded as -perseed writes it, so that an
					// unchanged run compares equal.
					scale := math.Pow10(perSeedDecimals)
					was, now = append(was, b), append(now, math.Round(r*scale)/scale)
				}
			}
			if len(was) == 0 {
				fmt.Printf(" — | 0 | | | |")
			} else {
				d := compare(was, now)
				fmt.Printf(" %.2f | %d | %+.3f | %.3f | %d |", d.before, len(was), d.mean, d.se, d.changed)
			}
		}
		fmt.Println()
		if out != nil {
			for s, r := range ratios {
				fmt.Fprintf(out, "%s\t%d\t%d\t%.*f\n", name, capacity, s+1, perSeedDecimals, r)
			}
		}
	}
	if out != nil {
		if err := out.Close(); err != nil {
			log.Fatalf("hitseeds: %v", err)
		}
	}
}

// runKey names one run of a -perseed file.
type runKey struct {
	trace    string
	capacity int
	seed     int
}

// readPerSeed reads a -perseed file.
func readPerSeed(r io.Reader) (map[runKey]float64, error) {
	runs := make(map[runKey]float64)
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want trace, capacity, seed, ratio", line)
		}
		c, err1 := strconv.Atoi(f[1])
		s, err2 := strconv.Atoi(f[2])
		v, err3 := strconv.ParseFloat(f[3], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		runs[runKey{f[0], c, s}] = v
	}
	return runs, sc.Err()
}

// pairing is the comparison of two builds' hit ratios on the same seeds.
type pairing struct {
	before  float64 // the earlier build's mean
	mean    float64 // mean of now − before, per seed
	se      float64 // its standard error (0 with one seed)
	changed int     // seeds whose hit ratio changed
}

// compare pairs before[i] with now[i] (the same seed's runs).
func compare(before, now []float64) pairing {
	n := float64(len(now))
	var p pairing
	for i := range now {
		p.before += before[i] / n
		d := now[i] - before[i]
		p.mean += d / n
		if d != 0 {
			p.changed++
		}
	}
	if len(now) > 1 {
		ss := 0.0
		for i := range now {
			d := now[i] - before[i] - p.mean
			ss += d * d
		}
		p.se = math.Sqrt(ss / (n - 1) / n)
	}
	return p
}

func traceKeys(name string) ([]uint64, error) {
	for _, t := range sim.Traces {
		if t.Name == name {
			return t.Keys()
		}
	}
	return nil, fmt.Errorf("no such trace")
}
