package featureflag_test

import (
	"errors"
	"math"
	"testing"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunFlag(t, storetest.Embedded)
}

func TestNewRejects(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for i, c := range []featureflag.Config{{}, {Backend: b, MaxStaleness: -1}, {Backend: b, AuditKeep: -1}} {
		if _, err := featureflag.New(c); !errors.Is(err, featureflag.ErrInvalidConfig) {
			t.Errorf("case %d: got %v, want ErrInvalidConfig", i, err)
		}
	}
}

func TestBucketStable(t *testing.T) {
	cases := []struct {
		flag, salt, unit string
	}{{"a", "", "u"}, {"checkout", "s1", "user-42"}, {"", "", ""}}
	for _, c := range cases {
		b := featureflag.Bucket(c.flag, c.salt, c.unit)
		if b < 0 || b >= featureflag.Buckets || b != featureflag.Bucket(c.flag, c.salt, c.unit) {
			t.Errorf("Bucket(%q, %q, %q) = %d: want a stable value in 0..9999", c.flag, c.salt, c.unit, b)
		}
	}
	if featureflag.Bucket("ab", "", "c") == featureflag.Bucket("a", "", "bc") && featureflag.Bucket("ab", "x", "c") == featureflag.Bucket("a", "x", "bc") {
		t.Error("Bucket does not separate its fields")
	}
}

// A unit's bucket is the same in every process and every release: the
// hash is unseeded, so these values are fixed; a change would move units
// in and out of running rollouts.
func TestBucketIsFixedAcrossProcesses(t *testing.T) {
	for _, c := range []struct {
		flag, salt, unit string
		want             int
	}{
		{"checkout", "checkout", "user-42", 9378},
		{"a", "", "u", 4908},
		{"\xff", "s", "\x00", 34},
	} {
		if got := featureflag.Bucket(c.flag, c.salt, c.unit); got != c.want {
			t.Errorf("Bucket(%q, %q, %q) = %d, want %d", c.flag, c.salt, c.unit, got, c.want)
		}
	}
}

// Percent converts a percentage to basis points exactly and refuses what
// a basis point cannot express or a rollout cannot be.
func TestPercent(t *testing.T) {
	for _, c := range []struct {
		pct  float64
		want int
		ok   bool
	}{
		{0, 0, true}, {12.5, 1250, true}, {0.07, 7, true}, {0.01, 1, true}, {33.33, 3333, true}, {100, featureflag.Buckets, true},
		{-0.01, 0, false}, {100.01, 0, false}, {12.345, 0, false}, {math.NaN(), 0, false}, {math.Inf(1), 0, false},
	} {
		got, err := featureflag.Percent(c.pct)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("Percent(%v): got (%d, %v), want %d", c.pct, got, err, c.want)
		}
		if !c.ok && !errors.Is(err, featureflag.ErrInvalidFlag) {
			t.Errorf("Percent(%v): got (%d, %v), want ErrInvalidFlag", c.pct, got, err)
		}
	}
	if p := (featureflag.State{Rollout: 1250}).RolloutPercent(); p != 12.5 {
		t.Errorf("RolloutPercent of 1250 bp: got %v, want 12.5", p)
	}
}
