// Command expiry measures, one peer per process:
//
//   - reclamation (default): n entries with TTLs uniform in [1 s, 2 s],
//     never read again; every 250 ms, the live heap above the baseline
//     (after runtime.GC) and the number of expired entries still resident,
//     until the heap is back near the baseline or -tail after the last
//     deadline;
//
//   - with -cost: the time of an explicit expiry pass removing -due due
//     keys, with 0 and with -resident not-yet-due keys present (median of
//     -reps, a fresh cache each, the two cases alternating; wall and
//     process CPU time), for the peers that have such a pass. The ratio
//     (loaded ÷ alone, by wall time) is what tide's target bounds (≤ 2).
//
//     go run ./cmd/expiry -peer all -out results/expiry.json
//     go run ./cmd/expiry -peer all -cost -out results/expirecost.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tidekv/tide/bench"
)

type costPair struct {
	Peer   string                 `json:"peer"`
	Method string                 `json:"method"`
	Alone  bench.ExpireCostResult `json:"alone"`
	Loaded bench.ExpireCostResult `json:"loaded"`
	Ratio  float64                `json:"ratio"`
	// CPURatio is the ratio of the passes' median CPU times.
	CPURatio float64 `json:"cpu_ratio,omitempty"`
	Err      string  `json:"err,omitempty"`
}

func main() {
	peer := flag.String("peer", "all", "peer name, comma-separated names, or all (one process per peer)")
	n := flag.Int("n", 1_000_000, "entries (reclamation)")
	interval := flag.Duration("interval", 250*time.Millisecond, "sampling interval")
	tail := flag.Duration("tail", 6*time.Second, "give up this long after the last deadline")
	cost := flag.Bool("cost", false, "measure the cost of expiring -due keys with and without -resident others")
	due := flag.Int("due", 10_000, "due keys (-cost)")
	resident := flag.Int("resident", 1_000_000, "not-yet-due keys (-cost)")
	reps := flag.Int("reps", 5, "repetitions (-cost)")
	settle := flag.Duration("settle", 1500*time.Millisecond, "wait this long after the due keys' TTL before the pass (-cost)")
	scale := flag.Float64("scale", 1, "multiply the 1-2 s TTLs by this (reclamation; the CI smoke uses 0.1)")
	out := flag.String("out", "", "write the collected results (JSON) here")
	flag.Parse()

	if p, err := bench.Lookup(*peer); err == nil {
		var v any
		if *cost {
			cp := costPair{Peer: p.Name}
			a, l, err := bench.MeasureExpireCostPair(p, *due, *resident, *reps, *settle)
			if err == nil {
				cp.Alone, cp.Loaded, cp.Method = a, l, a.Method
				if a.MedianMs > 0 {
					cp.Ratio = l.MedianMs / a.MedianMs
				}
				if a.MedianCPUMs > 0 {
					cp.CPURatio = l.MedianCPUMs / a.MedianCPUMs
				}
			}
			if err != nil {
				cp.Err = err.Error()
			}
			v = cp
		} else {
			v = bench.MeasureExpiry(p, *n, *interval, *tail, *scale)
		}
		b, _ := json.Marshal(v)
		fmt.Println(string(b))
		return
	}
	peers, err := bench.ParsePeers(*peer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	args := []string{"-n", fmt.Sprint(*n), "-interval", interval.String(), "-tail", tail.String(),
		"-due", fmt.Sprint(*due), "-resident", fmt.Sprint(*resident), "-reps", fmt.Sprint(*reps), "-scale", fmt.Sprint(*scale), "-settle", settle.String()}
	if *cost {
		args = append(args, "-cost")
	}
	lines := bench.ForEachPeer(peers, args)
	var res any
	if *cost {
		var rs []costPair
		fmt.Printf("| peer | method | %d due alone, ms | with %d not yet due, ms | ratio | CPU ms alone | CPU ms with | CPU ratio |\n|---|---|---|---|---|---|---|---|\n", *due, *resident)
		for _, l := range lines {
			var r costPair
			if json.Unmarshal(l, &r) != nil {
				continue
			}
			rs = append(rs, r)
			if r.Err != "" {
				fmt.Printf("| %s | n/a: %s | | | | | | |\n", r.Peer, r.Err)
				continue
			}
			fmt.Printf("| %s | %s | %.2f | %.2f | %.2f× | %.2f | %.2f | %.2f× |\n", r.Peer, r.Method, r.Alone.MedianMs, r.Loaded.MedianMs, r.Ratio, r.Alone.MedianCPUMs, r.Loaded.MedianCPUMs, r.CPURatio)
		}
		res = rs
	} else {
		var rs []bench.ExpiryResult
		fmt.Printf("| peer | TTL | peak MiB | heap back near baseline (s after last deadline) | no expired entry resident (s after) |\n|---|---|---|---|---|\n")
		for _, l := range lines {
			var r bench.ExpiryResult
			if json.Unmarshal(l, &r) != nil {
				continue
			}
			rs = append(rs, r)
			fmt.Printf("| %s | %s | %.0f | %s | %s |\n", r.Peer, r.TTL, r.PeakMB, secs(r.HeapBackAfter), secs(r.ClearAfter))
		}
		res = rs
	}
	if *out != "" {
		if err := bench.WriteJSON(*out, struct {
			Env     bench.Env `json:"env"`
			Results any       `json:"results"`
		}{bench.Environment(), res}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func secs(s float64) string {
	if s < 0 {
		return "never (in the run)"
	}
	return fmt.Sprintf("%.2f", s)
}
