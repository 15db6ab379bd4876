// Command memory measures, one peer per process, the heap each peer holds
// per entry beyond key + value (1M entries of 16-byte keys and 64-byte
// values, after runtime.GC) and, with -gc N, the wall time of N forced
// runtime.GC() calls with those entries resident.
//
// -peer takes names from bench.Peers and bench.CappedPeers, "all" (the
// former) or "capped" (the latter). The capped configurations are what a
// user with a cap runs: tide-capped (MaxBytes 1.5× the key space,
// bench.RecommendedPolicy), otter-capped (MaximumSize). tide-exact is the
// exact-capacity check: MaxBytes = n × (16 + 64 + engine.EntryOverhead)
// and n distinct entries inserted; the target is that all n stay resident.
//
//	go run ./cmd/memory -peer all -n 1000000 -out results/memory.json
//	go run ./cmd/memory -peer all -n 5000000 -gc 5 -out results/gc.json
//	go run ./cmd/memory -peer tide,tide-capped,tide-exact,otter,otter-capped,freecache -out results/memory-capped.json
//
// -memprofile FILE (one peer only) writes the heap profile as of the
// measurement's last collection, when the entries are resident: where the
// bytes per entry go (go tool pprof -sample_index=inuse_space -top FILE).
//
//	go run ./cmd/memory -peer tide-capped -memprofile /tmp/capped.pprof
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/tidekv/tide/bench"
	"github.com/tidekv/tide/engine"
)

func main() {
	peer := flag.String("peer", "all", "peer name, comma-separated names, or all (one process per peer)")
	n := flag.Int("n", 1_000_000, "entries")
	gc := flag.Int("gc", 0, "forced runtime.GC() calls to time after the fill")
	out := flag.String("out", "", "write the collected results (JSON) here")
	memprofile := flag.String("memprofile", "", "one peer only: write its heap profile (as of the measurement's last GC) here")
	flag.Parse()

	if p, err := bench.Lookup(*peer); err == nil {
		r := bench.MeasureMemory(p, *n, *gc)
		if *memprofile != "" {
			// The profile reflects the heap as of the last completed
			// collection: MeasureMemory's, with the entries resident (it
			// closes the cache after, and no collection has run since).
			if err := writeHeapProfile(*memprofile); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		return
	}
	peers, err := bench.ParsePeers(*peer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *memprofile != "" {
		fmt.Fprintln(os.Stderr, "-memprofile takes one peer")
		os.Exit(2)
	}
	lines := bench.ForEachPeer(peers, []string{"-n", fmt.Sprint(*n), "-gc", fmt.Sprint(*gc)})
	var rs []bench.MemoryResult
	for _, l := range lines {
		var r bench.MemoryResult
		if err := json.Unmarshal(l, &r); err == nil {
			rs = append(rs, r)
		}
	}
	fmt.Printf("| peer | entries | resident | heap MiB | B/entry | overhead B/entry | fill s | GC median ms |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Printf("| %s | %d | %d | %.1f | %.1f | %.1f | %.2f | %.2f |\n", r.Peer, r.Entries, r.Resident,
			float64(r.HeapBytes)/(1<<20), r.PerEntry, r.Overhead, r.FillSecs, r.GCMedianMs)
	}
	for _, r := range rs {
		if r.Peer == "tide-exact" {
			fmt.Printf("\nexact-capacity check (MaxBytes = %d × (%d + %d + engine.EntryOverhead %d), %s): %d of %d entries stay resident (target: all)\n",
				r.Entries, bench.KeyLen, bench.ValueLen, engine.EntryOverhead, bench.RecommendedPolicy.Name, r.Resident, r.Entries)
		}
	}
	if *out != "" {
		if err := bench.WriteJSON(*out, struct {
			Env     bench.Env            `json:"env"`
			Results []bench.MemoryResult `json:"results"`
		}{bench.Environment(), rs}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
