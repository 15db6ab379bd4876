package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Each heap measurement runs one peer per process, so that no peer's heap,
// GC pacing or background goroutines mix with another's. The commands in
// bench/cmd take -peer NAME (one measurement, one JSON line on stdout) or
// -peer all, which re-executes the command once per peer and collects the
// lines.

// ForEachPeer re-executes the running binary once per peer with args plus
// "-peer NAME", and returns each child's last stdout line (a JSON object).
// A failing child is reported on stderr and skipped.
func ForEachPeer(peers []string, args []string) []json.RawMessage {
	var out []json.RawMessage
	for _, p := range peers {
		cmd := exec.Command(os.Args[0], append(append([]string{}, args...), "-peer", p)...)
		cmd.Stderr = os.Stderr
		var buf bytes.Buffer
		cmd.Stdout = &buf
		start := time.Now()
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p, err)
			continue
		}
		var last []byte
		sc := bufio.NewScanner(&buf)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 && l[0] == '{' {
				last = append([]byte(nil), l...)
			}
		}
		fmt.Fprintf(os.Stderr, "%-15s done in %v\n", p, time.Since(start).Round(time.Millisecond))
		if last != nil {
			out = append(out, last)
		}
	}
	return out
}

// ParsePeers expands "all" or a comma-separated list.
func ParsePeers(s string) ([]string, error) {
	if s == "all" {
		return PeerNames(), nil
	}
	var ps []string
	for _, p := range strings.Split(s, ",") {
		if _, err := Lookup(p); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// WriteJSON writes v (indented) to path, creating its directory.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Env describes the machine and toolchain of a run.
type Env struct {
	Date   string `json:"date"`
	Go     string `json:"go"`
	OS     string `json:"os"`
	CPUs   int    `json:"cpus"`
	CPU    string `json:"cpu"`
	Module string `json:"module,omitempty"`
}

// Environment returns the Env of this process.
func Environment() Env {
	e := Env{
		Date: time.Now().UTC().Format(time.RFC3339),
		Go:   runtime.Version(),
		OS:   runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.NumCPU(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.Index(l, ":"); i >= 0 {
					e.CPU = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		e.Module = bi.Main.Path
	}
	return e
}

// HeapAlloc collects garbage twice and returns the live heap in bytes.
func HeapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Median returns the median of xs (which it sorts).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Fresh returns a newly allocated copy of key i and a new value, as an
// application would hand them to a cache it gives ownership to: peers that
// keep the caller's string and slice pay for them in the heap, peers that
// copy pay for their copy.
func Fresh(prefix byte, i int, tmpl []byte) (string, []byte) {
	k := Key(prefix, i)
	v := make([]byte, len(tmpl))
	copy(v, tmpl)
	return k, v
}
