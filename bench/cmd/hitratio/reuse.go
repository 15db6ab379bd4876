package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tidekv/tide/bench/sim"
)

// reused holds the per-trace tables of an earlier report (a HITRATIO.md
// written by this command): by trace name, each row's capacity label and
// each column's values, one per row in the trace's order.
type reused map[string]*reusedTable

type reusedTable struct {
	caps []string             // the rows' capacity labels ("2k", "1250")
	cols map[string][]float64 // by column name; -1 for a missing cell
}

// readReport parses the per-trace tables of an earlier report. A trace's
// table follows the line that starts with its name in backquotes
// ("`glimpse`, 6015 accesses…"); its header row names the columns, and
// each row starts with the capacity. Bold cells (**x**) are read as x, a
// dash as missing.
func readReport(path string) (reused, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := reused{}
	var trace string
	var cols []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "`"):
			if end := strings.Index(line[1:], "`"); end > 0 && strings.Contains(line, "accesses") {
				trace, cols = line[1:1+end], nil
			}
		case trace != "" && strings.HasPrefix(line, "| capacity |"):
			cols = cells(line)
			out[trace] = &reusedTable{cols: map[string][]float64{}}
		case trace != "" && cols != nil && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "|---"):
			row := cells(line)
			if len(row) != len(cols) {
				return nil, fmt.Errorf("%s: trace %s: row %q has %d cells, header %d", path, trace, line, len(row), len(cols))
			}
			tab := out[trace]
			tab.caps = append(tab.caps, row[0])
			for j := 1; j < len(row); j++ {
				v := strings.Trim(row[j], "*")
				x, err := strconv.ParseFloat(strings.TrimPrefix(v, "+"), 64)
				if err != nil {
					x = -1 // a dash: missing
				}
				tab.cols[cols[j]] = append(tab.cols[cols[j]], x)
			}
		case line == "":
			if cols != nil {
				trace, cols = "", nil
			}
		}
	}
	return out, sc.Err()
}

// cells splits a markdown table row into its trimmed cells.
func cells(line string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// column returns trace's column name, if the report has a value for every
// capacity of caps (the same rows, none missing).
func (r reused) column(trace, name string, caps []int) ([]float64, bool) {
	tab := r[trace]
	if tab == nil || len(tab.caps) != len(caps) || len(tab.cols[name]) != len(caps) {
		return nil, false
	}
	for i, c := range caps {
		if tab.caps[i] != sim.CapName(c) {
			return nil, false
		}
	}
	v := tab.cols[name]
	for _, x := range v {
		if x < 0 {
			return nil, false
		}
	}
	return v, true
}
