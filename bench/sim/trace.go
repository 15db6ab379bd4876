// Package sim is tide's hit-ratio simulator: trace readers for the ARC,
// LIRS, Scarab and Corda formats, synthetic Zipf workloads, an exact LRU
// reference, adapters for tide's eviction policies and for peer caches, and
// a runner. Methodology (Caffeine's, otter's, theine's): capacity in
// entries, cold start, every access is a read, a miss inserts the key, and
// hit ratio = hits / accesses.
package sim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// EnvTraces names the environment variable that overrides the trace
// directory.
const EnvTraces = "TIDE_TRACES"

// TraceDir returns the directory holding the trace files: $TIDE_TRACES if
// set, else ../shared/traces relative to the root of the tide repository
// (found by walking up from the working directory to the go.mod of module
// github.com/tidekv/tide).
func TraceDir() string {
	if d := os.Getenv(EnvTraces); d != "" {
		return d
	}
	if root, err := RepoRoot(); err == nil {
		return filepath.Join(root, "..", "shared", "traces")
	}
	return filepath.Join("..", "shared", "traces")
}

// RepoRoot walks up from the working directory to the directory whose go.mod
// declares module github.com/tidekv/tide.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/tidekv/tide\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("sim: tide repository root not found")
		}
		dir = parent
	}
}

// Format is a trace file format.
type Format int

// Trace formats (see /work/shared/traces/README.md).
const (
	ARC   Format = iota // "start count ignore reqno" lines; count consecutive keys
	LIRS                // one decimal key per line; blank lines and "*" skipped
	Int64               // big-endian int64 keys (Scarab, Corda)
)

// ReadTrace decodes a gzip-compressed trace in format f.
func ReadTrace(r io.Reader, f Format) ([]uint64, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 1<<16)
	var keys []uint64
	switch f {
	case Int64:
		var b [8]byte
		for {
			if _, err := io.ReadFull(br, b[:]); err != nil {
				if err == io.EOF {
					return keys, nil
				}
				return keys, err
			}
			keys = append(keys, binary.BigEndian.Uint64(b[:]))
		}
	case ARC, LIRS:
		sc := bufio.NewScanner(br)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 || (f == LIRS && string(line) == "*") {
				continue
			}
			if f == LIRS {
				k, err := strconv.ParseUint(string(line), 10, 64)
				if err != nil {
					return keys, fmt.Errorf("sim: lirs line %q: %w", line, err)
				}
				keys = append(keys, k)
				continue
			}
			fs := bytes.Fields(line)
			if len(fs) < 2 {
				return keys, fmt.Errorf("sim: arc line %q: want 4 fields", line)
			}
			start, err1 := strconv.ParseUint(string(fs[0]), 10, 64)
			count, err2 := strconv.ParseUint(string(fs[1]), 10, 64)
			if err1 != nil || err2 != nil {
				return keys, fmt.Errorf("sim: arc line %q: bad number", line)
			}
			for i := range count {
				keys = append(keys, start+i)
			}
		}
		return keys, sc.Err()
	}
	return nil, fmt.Errorf("sim: unknown format %d", f)
}

// Trace describes one workload of the table.
type Trace struct {
	Name  string // short name used on the command line and in file names
	Title string
	Caps  []int // capacities in entries
	Quick []int // capacities for -quick runs (nil: skip in quick mode; only the small traces have them)
	load  func() ([]uint64, error)
}

func file(rel string, f Format) func() ([]uint64, error) {
	return func() ([]uint64, error) {
		fh, err := os.Open(filepath.Join(TraceDir(), rel))
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		return ReadTrace(fh, f)
	}
}

func steps(from, to, step int) []int {
	var c []int
	for x := from; x <= to; x += step {
		c = append(c, x)
	}
	return c
}

// Traces lists every workload of the hit-ratio table, in table order.
var Traces = []*Trace{
	{Name: "oltp", Title: "OLTP (ARC)", Caps: steps(250, 2000, 250), load: file("arc/OLTP.lis.gz", ARC)},
	{Name: "glimpse", Title: "Glimpse (LIRS gli)", Caps: steps(250, 2000, 250), Quick: []int{500, 1000}, load: file("lirs/gli.trace.gz", LIRS)},
	{Name: "loop", Title: "Loop (LIRS)", Caps: steps(250, 1250, 250), load: file("lirs/loop.trace.gz", LIRS)},
	{Name: "multi1", Title: "multi1 (LIRS)", Caps: []int{250, 500, 1000, 1500, 2000}, Quick: []int{500}, load: file("lirs/multi1.trace.gz", LIRS)},
	{Name: "multi2", Title: "multi2 (LIRS)", Caps: []int{250, 500, 1000, 1500, 2000}, Quick: []int{500}, load: file("lirs/multi2.trace.gz", LIRS)},
	{Name: "multi3", Title: "multi3 (LIRS)", Caps: []int{250, 500, 1000, 1500, 2000}, Quick: []int{500}, load: file("lirs/multi3.trace.gz", LIRS)},
	{Name: "sprite", Title: "Sprite (LIRS)", Caps: []int{100, 250, 500, 1000, 2000}, Quick: []int{250}, load: file("lirs/sprite.trace.gz", LIRS)},
	{Name: "p3", Title: "P3 (ARC)", Caps: []int{25_000, 50_000, 100_000, 200_000, 300_000, 400_000}, load: file("arc/P3.lis.gz", ARC)},
	{Name: "scarab", Title: "Scarab recs", Caps: []int{1_000, 5_000, 10_000, 25_000, 50_000, 75_000, 100_000}, load: file("scarab/scarab-recs.trace.gz", Int64)},
	{Name: "mixed", Title: "Mixed: Corda + Loop + Corda", Caps: steps(250, 2000, 250), load: mixed},
	{Name: "zipf099", Title: "Zipf s=0.99, 1M keys, 1M requests", Caps: []int{1_000, 5_000, 10_000, 50_000, 100_000}, Quick: []int{1_000}, load: func() ([]uint64, error) { return Zipf(0.99, 1_000_000, 1_000_000, 1), nil }},
	{Name: "zipf1", Title: "Zipf s=1.0001, 1M keys, 1M requests", Caps: []int{1_000, 5_000, 10_000, 50_000, 100_000}, load: func() ([]uint64, error) { return Zipf(1.0001, 1_000_000, 1_000_000, 2), nil }},
	{Name: "otterzipf", Title: "otter's Zipf (rand.NewZipf s=1.0001 v=10 imax=5e7, 1M requests)", Caps: []int{500, 5_000, 20_000, 80_000}, load: func() ([]uint64, error) { return OtterZipf(1_000_000, 1), nil }},
}

// Extra traces that are not in the table but are checked against the
// reference LRU numbers by the tests.
var Extra = []*Trace{
	{Name: "2_pools", Caps: []int{100, 250, 500, 1000, 2000}, load: file("lirs/2_pools.trace.gz", LIRS)},
	{Name: "cpp", Caps: []int{100, 250, 500, 1000}, load: file("lirs/cpp.trace.gz", LIRS)},
	{Name: "cs", Caps: []int{1250, 1500}, load: file("lirs/cs.trace.gz", LIRS)},
	{Name: "ps", Caps: []int{250, 500, 1250, 2000}, load: file("lirs/ps.trace.gz", LIRS)},
	{Name: "zigzag", Caps: []int{250, 500, 1000, 2000}, load: file("lirs/zigzag.trace.gz", LIRS)},
	{Name: "backf", Caps: []int{250, 500, 750}, load: file("lirs/backf.trace.gz", LIRS)},
	{Name: "corda", Caps: []int{250, 2000}, load: file("corda/trace_vaultservice.gz", Int64)},
}

func mixed() ([]uint64, error) {
	c, err := file("corda/trace_vaultservice.gz", Int64)()
	if err != nil {
		return nil, err
	}
	l, err := file("lirs/loop.trace.gz", LIRS)()
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, 2*len(c)+len(l))
	out = append(append(append(out, c...), l...), c...)
	return out, nil
}

var (
	cacheMu sync.Mutex
	loaded  = map[string]*loadResult{}
)

type loadResult struct {
	once sync.Once
	keys []uint64
	err  error
}

// Keys returns the trace's key sequence, loading it once per process.
func (t *Trace) Keys() ([]uint64, error) {
	cacheMu.Lock()
	r := loaded[t.Name]
	if r == nil {
		r = &loadResult{}
		loaded[t.Name] = r
	}
	cacheMu.Unlock()
	r.once.Do(func() { r.keys, r.err = t.load() })
	return r.keys, r.err
}

// Lookup returns the trace with the given name from Traces or Extra.
func Lookup(name string) *Trace {
	for _, t := range append(append([]*Trace{}, Traces...), Extra...) {
		if t.Name == name {
			return t
		}
	}
	return nil
}
