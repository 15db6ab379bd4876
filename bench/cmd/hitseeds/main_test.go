package main

import (
	"math"
	"strings"
	"testing"
)

func TestReadPerSeed(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[runKey]float64
		err      bool
	}{
		{"two runs", "glimpse\t750\t1\t32.5000\nmixed\t500\t2\t42.0100\n", map[runKey]float64{{"glimpse", 750, 1}: 32.5, {"mixed", 500, 2}: 42.01}, false},
		{"empty", "", map[runKey]float64{}, false},
		{"three fields", "glimpse\t750\t1\n", nil, true},
		{"bad ratio", "glimpse\t750\t1\tx\n", nil, true},
	} {
		got, err := readPerSeed(strings.NewReader(tc.in))
		if (err != nil) != tc.err {
			t.Errorf("%s: got error %v, want error %v", tc.name, err, tc.err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: got %v for %v, want %v", tc.name, got[k], k, v)
			}
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before, now []float64
		want        pairing
	}{
		{"unchanged", []float64{30, 40}, []float64{30, 40}, pairing{before: 35}},
		{"one seed", []float64{30}, []float64{31}, pairing{before: 30, mean: 1, changed: 1}},
		// differences 1 and 3: mean 2, sample deviation √2, SE √2/√2 = 1.
		{"two seeds", []float64{30, 40}, []float64{31, 43}, pairing{before: 35, mean: 2, se: 1, changed: 2}},
	} {
		got := compare(tc.before, tc.now)
		if math.Abs(got.before-tc.want.before) > 1e-9 || math.Abs(got.mean-tc.want.mean) > 1e-9 ||
			math.Abs(got.se-tc.want.se) > 1e-9 || got.changed != tc.want.changed {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
