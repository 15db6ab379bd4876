package main

import "testing"

// The parser takes cachegrind's totals (numbers with thousands commas) and
// the child's read path, and refuses an output without a summary.
func TestParseSummary(t *testing.T) {
	const out = `==21922== I   refs:      5,461,209,814
==21922== I1  misses:          12,345
==21922== D1  misses:       34,511,110  (   23,679,851 rd   +  10,831,259 wr)
==21922== LLd misses:       18,797,428  (    8,558,964 rd   +  10,238,464 wr)
readcost-path View 128000000
`
	tests := []struct {
		name string
		out  string
		want counts
		ok   bool
	}{
		{"summary", out, counts{ir: 5461209814, d1: 34511110, lld: 18797428, path: "View"}, true},
		{"no summary (a crashed child)", "panic: boom\n", counts{}, false},
		{"a summary cut short", "==1== I   refs:      5\n==1== D1  misses:       3  (1 rd + 2 wr)\n", counts{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSummary(tt.out)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("parseSummary = %+v, %v; want %+v, ok %v", got, err, tt.want, tt.ok)
			}
		})
	}
}
