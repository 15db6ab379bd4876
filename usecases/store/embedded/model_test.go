package embedded_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func newRapidBackend(t *rapid.T) (*embedded.Backend, *clock.Manual, func()) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := engine.New(engine.Config{Clock: clk, ExpiryInterval: -1, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := embedded.New(embedded.Config{Engine: e, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return b, clk, func() { e.Close() }
}

// TestTokenBucketModel checks the GCRA decision against the textbook token
// bucket: a level of tokens (in nanoseconds of refill) that fills at one
// token per interval up to the capacity.
func TestTokenBucketModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, clk, done := newRapidBackend(t)
		defer done()
		capacity := rapid.Int64Range(1, 10).Draw(t, "capacity")
		interval := time.Duration(rapid.Int64Range(1, 1000).Draw(t, "interval_ms")) * time.Millisecond
		burst := capacity * int64(interval)
		level, last := burst, clk.Now()
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			clk.Advance(time.Duration(rapid.Int64Range(0, 3*int64(interval/time.Millisecond)).Draw(t, "advance_ms")) * time.Millisecond)
			cost := rapid.Int64Range(0, capacity).Draw(t, "cost")
			now := clk.Now()
			level = min(burst, level+(now-last))
			last = now
			want := store.TokenBucket{Allowed: level >= cost*int64(interval)}
			if want.Allowed {
				level -= cost * int64(interval)
			} else {
				want.RetryAfter = time.Duration(cost*int64(interval) - level)
			}
			want.Remaining = level / int64(interval)
			want.Reset = time.Duration(burst - level)
			d := &store.TokenBucket{Key: "k", Capacity: capacity, Interval: interval, Cost: cost}
			if err := b.Decide(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if d.Allowed != want.Allowed || d.Remaining != want.Remaining || d.RetryAfter != want.RetryAfter || d.Reset != want.Reset {
				t.Fatalf("step %d (cost %d): got allowed %v remaining %d retry %v reset %v, want %v %d %v %v",
					i, cost, d.Allowed, d.Remaining, d.RetryAfter, d.Reset, want.Allowed, want.Remaining, want.RetryAfter, want.Reset)
			}
		}
	})
}

// TestWindowModels checks the fixed and sliding windows against direct
// models: a counter with an end time, and a list of admission times.
func TestWindowModels(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, clk, done := newRapidBackend(t)
		defer done()
		limit := rapid.Int64Range(1, 8).Draw(t, "limit")
		window := time.Duration(rapid.Int64Range(1, 20).Draw(t, "window_s")) * time.Second
		var count int64
		var end int64 // fixed window end; 0: none
		var log []int64
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			clk.Advance(time.Duration(rapid.Int64Range(0, 5000).Draw(t, "advance_ms")) * time.Millisecond)
			cost := rapid.Int64Range(0, limit).Draw(t, "cost")
			now := clk.Now()

			// Fixed window model.
			if end != 0 && now >= end {
				count, end = 0, 0
			}
			var fw store.FixedWindow
			if count+cost <= limit {
				fw.Allowed = true
				if cost > 0 {
					if end == 0 {
						end = now + int64(window)
					}
					count += cost
				}
				fw.Remaining = limit - count
				if end != 0 {
					fw.Reset = time.Duration(end - now)
				}
			} else {
				fw.Remaining = limit - count
				fw.Reset = time.Duration(end - now)
				fw.RetryAfter = fw.Reset
			}
			d := &store.FixedWindow{Key: "fw", Limit: limit, Window: window, Cost: cost}
			if err := b.Decide(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if d.Allowed != fw.Allowed || d.Remaining != fw.Remaining || d.RetryAfter != fw.RetryAfter || d.Reset != fw.Reset {
				t.Fatalf("fixed step %d (cost %d): got %v %d %v %v, want %v %d %v %v", i, cost,
					d.Allowed, d.Remaining, d.RetryAfter, d.Reset, fw.Allowed, fw.Remaining, fw.RetryAfter, fw.Reset)
			}

			// Sliding window model.
			log = slices.DeleteFunc(log, func(ts int64) bool { return ts <= now-int64(window) })
			n := int64(len(log))
			var sw store.SlidingWindow
			if n+cost <= limit {
				sw.Allowed = true
				for range cost {
					log = append(log, now)
				}
				sw.Remaining = limit - n - cost
			} else {
				sw.Remaining = limit - n
				sw.RetryAfter = time.Duration(log[n+cost-limit-1] + int64(window) - now)
			}
			if len(log) > 0 {
				sw.Reset = time.Duration(log[len(log)-1] + int64(window) - now)
			}
			s := &store.SlidingWindow{Key: "sw", Limit: limit, Window: window, Cost: cost}
			if err := b.Decide(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if s.Allowed != sw.Allowed || s.Remaining != sw.Remaining || s.RetryAfter != sw.RetryAfter || s.Reset != sw.Reset {
				t.Fatalf("sliding step %d (cost %d): got %v %d %v %v, want %v %d %v %v", i, cost,
					s.Allowed, s.Remaining, s.RetryAfter, s.Reset, sw.Allowed, sw.Remaining, sw.RetryAfter, sw.Reset)
			}
		}
	})
}
