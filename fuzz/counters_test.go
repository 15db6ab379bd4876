package fuzz

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
)

// FuzzCounters checks counter parsing and overflow: any stored value, any
// delta, through IncrBy, DecrBy, Incr, Decr and IncrWith. A value is an
// integer exactly when it is a canonical base-10 int64 (strconv round trip);
// a result that does not fit is ErrOverflow; on any error the value, its
// version and its TTL are unchanged. Then the rest of the input runs as an
// op stream weighted towards counters (creation with TTL and pinning,
// expiry, clock jumps, overwrites with non-integers) against the model.
func FuzzCounters(f *testing.F) {
	for _, s := range []struct {
		v     string
		delta int64
		ops   []byte
	}{
		{"0", 1, nil}, {"-1", -1, nil}, {"9223372036854775807", 1, nil}, {"-9223372036854775808", -1, nil},
		{"-9223372036854775808", math.MinInt64, nil}, {"007", 1, nil}, {"-0", 1, nil}, {"+5", 1, nil},
		{" 5", 1, nil}, {"5 ", 1, nil}, {"", 1, nil}, {"12a", 1, nil}, {"99999999999999999999", 1, nil},
		{"1", math.MaxInt64, nil}, {"-2", math.MinInt64, nil}, {"42", 0, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"1", 3, []byte{2, 0, 2, 4, 1, 9, 3, 2, 5, 0, 7, 2, 6, 1, 2}},
	} {
		f.Add([]byte(s.v), s.delta, s.ops)
	}
	f.Fuzz(func(t *testing.T, value []byte, delta int64, ops []byte) {
		clk := clock.NewManual(start)
		e, err := engine.New(engine.Config{Shards: 1, Clock: clk, ExpiryInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		n, isInt := canonical(value)
		type call struct {
			name string
			d    int64 // the delta applied
			run  func() (int64, error)
		}
		calls := []call{
			{"IncrBy", delta, func() (int64, error) { return e.IncrBy("k", delta) }},
			{"DecrBy", -delta, func() (int64, error) { return e.DecrBy("k", delta) }},
			{"Incr", 1, func() (int64, error) { return e.Incr("k") }},
			{"Decr", -1, func() (int64, error) { return e.Decr("k") }},
			{"IncrWith", delta, func() (int64, error) { return e.IncrWith("k", delta, engine.IncrOptions{TTL: time.Hour, Pin: true}) }},
		}
		for _, c := range calls {
			if _, err := e.SetTTL("k", value, time.Minute); err != nil {
				t.Fatal(err)
			}
			before, _ := e.GetItem("k")
			got, err := c.run()
			after, ok := e.GetItem("k")
			if !ok {
				t.Fatalf("%s(%q, %d) removed the key", c.name, value, delta)
			}
			var want error
			switch {
			case c.name == "DecrBy" && delta == math.MinInt64:
				want = engine.ErrOverflow
			case !isInt:
				want = engine.ErrNotInteger
			case c.d > 0 && n > math.MaxInt64-c.d, c.d < 0 && n < math.MinInt64-c.d:
				want = engine.ErrOverflow
			}
			if want != nil {
				if !errors.Is(err, want) {
					t.Fatalf("%s on %q by %d: %d, %v; want %v", c.name, value, delta, got, err, want)
				}
				if string(after.Value) != string(before.Value) || after.Version != before.Version || after.TTL != before.TTL || after.Pinned {
					t.Fatalf("%s failed but changed the key: %+v → %+v", c.name, before, after)
				}
				continue
			}
			if err != nil || got != n+c.d {
				t.Fatalf("%s on %q by %d = %d, %v; want %d", c.name, value, delta, got, err, n+c.d)
			}
			if string(after.Value) != strconv.FormatInt(n+c.d, 10) || after.Version <= before.Version {
				t.Fatalf("%s stored %q v%d (before v%d), want %d", c.name, after.Value, after.Version, before.Version, n+c.d)
			}
			// Counters keep the TTL (IncrOptions.TTL applies only on
			// create); IncrOptions.Pin pins, as SetOptions.Pin does.
			if wantPin := c.name == "IncrWith"; after.TTL != before.TTL || after.Pinned != wantPin {
				t.Fatalf("%s changed the TTL of an existing key, or its pinning (want pinned=%v): %+v → %+v", c.name, wantPin, before, after)
			}
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
		// The op stream.
		r := &in{b: ops}
		h := newHarness(t, r)
		h.keys = []string{"n", "m", "c", "", "0123456789abcdef", "0123456789abcdefX", "x"}
		counterOps := []int{17, 17, 17, 18, 19, 0, 2, 9, 21, 23, 13, 15, 6, 12, 20, 17, 18}
		h.run(r, func(r *in) int { return counterOps[int(r.u8())%len(counterOps)] })
	})
}
