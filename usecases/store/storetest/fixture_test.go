package storetest

import (
	"testing"
	"time"
)

// TestToleranceCoversCallLatency: on real time, the tolerance of a
// duration check grows by the real time spent beyond what Advance was asked
// for, whether it went into oversleeping or into the calls between two
// Advances (a round trip, a stall). Only lower bounds are checked: sleeps
// never end early.
func TestToleranceCoversCallLatency(t *testing.T) {
	const slack = time.Millisecond
	nf := instrument(func(*testing.T) Fixture {
		return Fixture{Advance: SleepAdvance, Unit: 5 * slack, Slack: slack}
	})
	f := nf(t)
	f.Advance(10 * time.Millisecond)
	const latency = 30 * time.Millisecond
	time.Sleep(latency) // a slow call between two steps
	if got := f.tolerance(); got < slack+latency {
		t.Fatalf("tolerance after %v of call latency: got %v, want at least %v", latency, got, slack+latency)
	}
	exact := instrument(func(*testing.T) Fixture { return Fixture{Advance: func(time.Duration) {}} })(t)
	if got := exact.tolerance(); got != 0 {
		t.Fatalf("tolerance of an exact clock: got %v, want 0", got)
	}
}
