// Command readcost counts what one read of a pre-filled cache costs in
// instructions and data-cache misses, with cachegrind (valgrind's cache
// simulator): a figure that, unlike a timing, does not move with the load
// of a shared machine, for judging a change of the read path. With -path
// Set it counts an overwrite of a pre-filled key instead (the operations
// below are then writes of the trace's keys).
//
// The workload is cmd/speed's: -keys keys of 16 bytes with 64-byte values,
// the cache pre-filled (bench.Dataset: each value in memory of its own,
// reads looking up with copies of the stored keys; -shared: the older
// dataset, see bench.Dataset.Shared), then reads of the Zipf 1.01 trace
// on one goroutine (GOMAXPROCS 1, the garbage collector off). readcost runs it under
// cachegrind twice, with -warm reads and with -warm + -ops reads (-warm is
// 0 by default), and reports the difference per read: instructions (Ir),
// first-level data-cache misses (D1) and last-level data misses (LLd) of a
// simulated last-level cache of -ll (cachegrind's
// size,associativity,line; the default, 32 MiB, is a server's share, where
// the 1M-key data set does not fit). A miss of the caller's own (its key's
// bytes, the trace) is counted too, the same for every cache.
//
//	go run ./cmd/readcost -peer tide,tide-capped,otter-capped,otter-capped-sync
//	go run ./cmd/readcost -peer tide-capped -warm 2000000 -ops 1000000   # a calm cache (see engine/readlog.go)
//	go run ./cmd/readcost -peer tide,tide-capped -path Set -warm 1000000 -ops 500000
//
// It needs valgrind (apt-get install valgrind); each run takes about a
// minute per peer.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/tidekv/tide/bench"
)

func main() {
	peers := flag.String("peer", "tide,tide-capped", "comma-separated bench peers")
	path := flag.String("path", "View", "read path: View (where the cache has one, else AppendGet), Get (a fresh copy per read, where the cache has one, else AppendGet) or AppendGet; or Set: overwrites of the pre-filled keys instead of reads")
	keys := flag.Int("keys", 1_000_000, "keys in the key space")
	ops := flag.Int("ops", 2_000_000, "reads in the measured run")
	warm := flag.Int("warm", 0, "reads made before the measured ones in both runs (a cache read for a while: tide's calm sampling starts after a pass of reads)")
	ll := flag.String("ll", "33554432,16,64", "simulated last-level cache: size,associativity,line (cachegrind's --LL)")
	child := flag.Int("child", -1, "internal: run the workload with this many reads (-warm included)")
	flag.BoolVar(&shared, "shared", false, "the dataset of the runs before the eleventh pass of issue 16 (bench.Dataset.Shared; cmd/speed -shared)")
	flag.Parse()
	var err error
	if *child >= 0 {
		err = runChild(*peers, *path, *keys, *child)
	} else {
		err = runParent(*peers, *path, *keys, *warm, *ops, *ll)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "readcost:", err)
		os.Exit(1)
	}
}

// shared is -shared: the child uses bench.Dataset.Shared.
var shared bool

// runChild fills the cache and makes n reads.
func runChild(peer, path string, keys, n int) error {
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(-1)
	p, err := bench.Lookup(peer)
	if err != nil {
		return err
	}
	d := bench.Throughput(keys)
	if shared {
		d = d.Shared()
	}
	// No background expiry: a goroutine on a wall-clock ticker (go-cache's
	// janitor scans every entry once a second) runs a number of times that
	// depends on how long valgrind takes, not on the reads.
	c := p.New(bench.Options{Entries: keys, KeyLen: bench.KeyLen, ValueLen: bench.ValueLen, NoBackground: true})
	defer c.Close()
	bench.Fill(c, d.Stored, d.Values, false)
	viewer, view := c.(bench.Viewer)
	view = view && path == "View"
	copier, cp := c.(bench.Copier)
	cp = cp && path == "Get"
	var seen int
	see := func(v []byte) { seen += len(v) }
	buf := make([]byte, 0, 256)
	tmpl := append([]byte(nil), d.Values[0]...)
	for i := range n {
		t := d.Trace[i&(bench.TraceLen-1)]
		k := d.Keys[t]
		if path == "Set" {
			if shared {
				c.Set(d.Stored[t], d.Values[0])
			} else {
				c.Set(d.Stored[t], append([]byte(nil), tmpl...)) // as bench.RunMix's writes
			}
			continue
		}
		if view {
			viewer.View(k, see)
		} else if cp {
			v, _ := copier.GetCopy(k)
			seen += len(v)
		} else {
			buf, _ = c.Get(buf[:0], k)
			seen += len(buf)
		}
	}
	used := "AppendGet"
	switch {
	case path == "Set":
		used = "Set"
	case view:
		used = "View"
	case cp:
		used = "Get"
	}
	fmt.Println("readcost-path", used, seen)
	return nil
}

// counts are cachegrind's totals of one run, and the read path it used.
type counts struct {
	ir, d1, lld float64
	path        string
}

func runParent(peers, path string, keys, warm, ops int, ll string) error {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return errors.New("valgrind not found (apt-get install valgrind)")
	}
	if ops <= 0 || warm < 0 {
		return errors.New("-ops must be positive, -warm not negative")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	op := "read"
	if path == "Set" {
		op = "write"
	}
	fmt.Printf("| cache | path | instructions / %[1]s | D1 misses / %[1]s | LL misses / %[1]s |\n|---|---|---:|---:|---:|\n", op)
	for _, peer := range bench.SplitComma(peers) {
		if _, err := bench.Lookup(peer); err != nil {
			return err
		}
		var runs [2]counts
		for i, n := range []int{warm, warm + ops} {
			if runs[i], err = cachegrind(self, ll, peer, path, keys, n); err != nil {
				return fmt.Errorf("%s: %w", peer, err)
			}
		}
		per := func(f func(counts) float64) float64 { return (f(runs[1]) - f(runs[0])) / float64(ops) }
		fmt.Printf("| %s | %s | %.0f | %.2f | %.2f |\n", peer, runs[1].path,
			per(func(c counts) float64 { return c.ir }), per(func(c counts) float64 { return c.d1 }), per(func(c counts) float64 { return c.lld }))
	}
	return nil
}

// cachegrind runs the child under cachegrind and parses its summary.
func cachegrind(self, ll, peer, path string, keys, n int) (counts, error) {
	args := []string{"--tool=cachegrind", "--cache-sim=yes", "--LL=" + ll, "--cachegrind-out-file=/dev/null",
		self, "-child", strconv.Itoa(n), "-peer", peer, "-path", path, "-keys", strconv.Itoa(keys)}
	if shared {
		args = append(args, "-shared")
	}
	cmd := exec.Command("valgrind", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return counts{}, fmt.Errorf("%v: %s", err, lastLines(out.String(), 5))
	}
	return parseSummary(out.String())
}

// parseSummary reads cachegrind's totals (I refs, D1 misses, LLd misses)
// and the child's read path from the output of one run.
func parseSummary(out string) (counts, error) {
	var c counts
	found := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 3 && f[0] == "readcost-path" {
			c.path = f[1]
		}
		for _, f := range []struct {
			label string
			dst   *float64
		}{{"I   refs:", &c.ir}, {"D1  misses:", &c.d1}, {"LLd misses:", &c.lld}} {
			if i := strings.Index(line, f.label); i >= 0 {
				fields := strings.Fields(line[i+len(f.label):])
				if len(fields) == 0 {
					continue
				}
				v, err := strconv.ParseFloat(strings.ReplaceAll(fields[0], ",", ""), 64)
				if err != nil {
					return counts{}, fmt.Errorf("cachegrind summary %q: %w", line, err)
				}
				*f.dst = v
				found++
			}
		}
	}
	if found != 3 {
		return counts{}, fmt.Errorf("cachegrind summary not found: %s", lastLines(out, 5))
	}
	return c, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
