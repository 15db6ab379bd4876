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
// seed's, common to both).
//
// Traces are found as cmd/hitratio finds them (-dir or $TIDE_TRACES).
package main

import (
	"flag"
	"fmt"
	"log"
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

func main() {
	log.SetFlags(0)
	policy := flag.String("policy", "tinylfu", "eviction policy name (evict.Parse)")
	seeds := flag.Int("seeds", 8, "hash seeds 1..n to average")
	cells := flag.String("cells", defaultCells, "comma-separated trace:capacity cells")
	dir := flag.String("dir", "", "trace directory (default $"+sim.EnvTraces+")")
	perSeed := flag.String("perseed", "", "if set, a file to write each run's hit ratio to (trace, capacity, seed, ratio)")
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
	fmt.Printf("| trace | capacity | %s, mean of %d seeds | min | max |\n|---|---:|---:|---:|---:|\n", spec.Name, *seeds)
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
		fmt.Printf("| %s | %d | %.2f | %.2f | %.2f |\n", name, capacity, sum/float64(len(ratios)), lo, hi)
		if out != nil {
			for s, r := range ratios {
				fmt.Fprintf(out, "%s\t%d\t%d\t%.4f\n", name, capacity, s+1, r)
			}
		}
	}
	if out != nil {
		if err := out.Close(); err != nil {
			log.Fatalf("hitseeds: %v", err)
		}
	}
}

func traceKeys(name string) ([]uint64, error) {
	for _, t := range sim.Traces {
		if t.Name == name {
			return t.Keys()
		}
	}
	return nil, fmt.Errorf("no such trace")
}
