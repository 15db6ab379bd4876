package lease_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New refuses a configuration that leaves a lease no safe time at all
// (Margin ≥ TTL·(1−Drift): SafeRemaining ≤ 0 from the moment of
// acquisition, so SafeContext is born cancelled), a Drift outside
// [0, 0.5) or NaN, a negative Margin, and a TTL below MinTTL (the
// coarsest TTL granularity of a supported backend). Whatever New accepts
// has a positive safe budget right after Acquire.
func TestNewRefusesLeaseWithoutSafeTime(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	cases := []struct {
		name string
		cfg  lease.Config
		ok   bool
	}{
		{"defaults", lease.Config{}, true},
		{"Margin = TTL", lease.Config{TTL: time.Second, Margin: time.Second}, false},
		{"Margin > TTL", lease.Config{TTL: time.Second, Margin: time.Minute}, false},
		{"Margin = TTL·(1−Drift)", lease.Config{TTL: time.Second, Drift: 0.25, Margin: 750 * time.Millisecond}, false},
		{"Margin just below TTL·(1−Drift)", lease.Config{TTL: time.Second, Drift: 0.25, Margin: 750*time.Millisecond - 1}, true},
		{"default Margin (5 ms) = TTL·(1−default Drift)", lease.Config{TTL: 5 * time.Millisecond}, false},
		{"default Margin, TTL 6 ms", lease.Config{TTL: 6 * time.Millisecond}, true},
		{"TTL below MinTTL", lease.Config{TTL: lease.MinTTL - 1, Margin: time.Nanosecond}, false},
		{"TTL 1 ns", lease.Config{TTL: 1, Margin: time.Nanosecond}, false},
		{"TTL = MinTTL", lease.Config{TTL: lease.MinTTL, Margin: time.Nanosecond}, true},
		{"Drift 0.5", lease.Config{Drift: 0.5}, false},
		{"Drift 1", lease.Config{Drift: 1}, false},
		{"Drift negative", lease.Config{Drift: -0.01}, false},
		{"Drift NaN", lease.Config{Drift: math.NaN()}, false},
		{"Drift +Inf", lease.Config{Drift: math.Inf(1)}, false},
		{"Margin negative", lease.Config{Margin: -1}, false},
	}
	for _, c := range cases {
		c.cfg.Backend = b
		local := clock.NewManual(time.Unix(1000, 0))
		c.cfg.LocalClock = local
		m, err := lease.New(c.cfg)
		switch {
		case !c.ok && !errors.Is(err, lease.ErrInvalidConfig):
			t.Errorf("%s: New got %v, want ErrInvalidConfig", c.name, err)
		case c.ok && err != nil:
			t.Errorf("%s: New got %v, want accepted", c.name, err)
		case c.ok:
			l, _, ok, err := m.Acquire(t.Context(), c.name, "A")
			if !ok || err != nil {
				t.Fatalf("%s: Acquire got (%v, %v), want the lease", c.name, ok, err)
			}
			if got := m.SafeRemaining(l); got <= 0 {
				t.Errorf("%s: SafeRemaining right after Acquire got %v, want > 0", c.name, got)
			}
		}
	}
}
