package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
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
		start := time.Now()
		line, err := RunChild(append(append([]string{}, args...), "-peer", p))
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p, err)
			continue
		}
		fmt.Fprintf(os.Stderr, "%-15s done in %v\n", p, time.Since(start).Round(time.Millisecond))
		out = append(out, line)
	}
	return out
}

// RunChild re-executes the running binary with args (its stderr goes to
// ours) and returns the last line of its stdout that is a JSON object.
func RunChild(args []string) (json.RawMessage, error) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	var buf bytes.Buffer
	cmd.Stdout = &buf
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	return LastJSONLine(buf.Bytes())
}

// ErrNoResult: a child printed no JSON line.
var ErrNoResult = errors.New("bench: child printed no JSON result line")

// LastJSONLine returns the last line of out that starts with '{' (after
// trimming space), or ErrNoResult.
func LastJSONLine(out []byte) (json.RawMessage, error) {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 && l[0] == '{' {
			last = append([]byte(nil), l...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if last == nil {
		return nil, ErrNoResult
	}
	return last, nil
}

// SplitComma splits a comma-separated list, dropping empty items.
func SplitComma(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// ParsePeers expands "all" (Peers), "capped" (CappedPeers) or a
// comma-separated list of names from either.
func ParsePeers(s string) ([]string, error) {
	switch s {
	case "all":
		return PeerNames(), nil
	case "capped":
		return CappedNames(), nil
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
	// THP is Linux's transparent huge page mode (the bracketed word of
	// /sys/kernel/mm/transparent_hugepage/enabled: always, madvise or
	// never), "" elsewhere. It moves random-access figures: the Go runtime
	// asks for no huge pages, so under madvise (most distributions'
	// default) a cache's large arrays are mapped in 4 KiB pages, and a
	// lookup in them pays TLB misses (page walks cost more under a
	// hypervisor); under always the kernel backs them with 2 MiB pages.
	THP string `json:"thp,omitempty"`
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
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil {
		e.THP = thpMode(string(b))
	}
	return e
}

// thpMode returns the selected mode of a transparent_hugepage/enabled
// file ("always [madvise] never" → "madvise"), or "" if none is marked.
func thpMode(s string) string {
	for _, f := range strings.Fields(s) {
		if len(f) > 2 && f[0] == '[' && f[len(f)-1] == ']' {
			return f[1 : len(f)-1]
		}
	}
	return ""
}

// LoadAvg returns the 1, 5 and 15 minute load averages of the machine as
// /proc/loadavg gives them ("5.74 4.33 2.27"), or "unknown".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
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
