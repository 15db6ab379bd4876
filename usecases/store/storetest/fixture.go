// Package storetest is the conformance suite for store.Backend and the
// contract suites of the use-case adapters, written so that any backend can
// run them: the embedded engine here, Redis or Valkey in another module.
//
// # Plugging in a backend
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Fixture {
//			b := newRedisBackend(t) // fresh keyspace (FLUSHDB or a unique prefix)
//			return storetest.Fixture{
//				Backend: b,
//				Advance: storetest.SleepAdvance,
//				Unit:    100 * time.Millisecond,
//				Slack:   25 * time.Millisecond,
//				Scope: func(prefix string) (store.Backend, error) {
//					return newRedisBackendWithPrefix(prefix) // same server
//				},
//			}
//		})
//		storetest.RunUseCases(t, newFixture) // the adapters' suites
//	}
//
// # Time
//
// Time-dependent cases need the backend's clock to move. A backend whose
// clock is controllable (the embedded engine on clock.Manual) advances it
// exactly, and every duration check is exact. A backend on real time (Redis
// TIME) passes an Advance that sleeps, a small Unit so that the cases stay
// fast (every duration in the suite is a small multiple of Unit), and a
// Slack: the tolerance on every reported duration (TTL, retry-after,
// reset), covering the backend's TTL granularity. Slack must be well below
// Unit (Unit ≥ 5×Slack). The suites add to it, at each check, the real time
// the case has spent so far beyond what it asked Advance for: sleep
// overshoot and the latency of every call (a round trip, a stall on a
// loaded machine), so that neither accumulates into failures. A backend
// that cannot move time at all leaves Advance nil: the time-dependent cases
// are then skipped, the others still run.
//
// # Keys
//
// Every key the suites pass to one decision shares a hash tag ("{...}"), so
// the suites run unchanged on Redis Cluster.
package storetest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// Fixture is one fresh, empty backend for one test case.
type Fixture struct {
	// Backend is the backend under test. Its keyspace must be empty.
	Backend store.Backend
	// Advance moves the backend's clock forward by d. It may sleep. nil
	// means the clock cannot be moved: time-dependent cases are skipped.
	Advance func(d time.Duration)
	// Unit scales every duration the suite uses. 0 means one second.
	Unit time.Duration
	// Slack is the tolerance on durations the backend reports. 0 means
	// exact.
	Slack time.Duration
	// Scope returns another backend on the same store as Backend, scoped
	// by prefix (its Config.Prefix; store package doc, "Scopes"), or the
	// error its constructor gives for prefix. The suite uses each prefix
	// in one case only, so that the keyspace under it is empty. nil means
	// the backend has no scopes: the scoping case is skipped.
	Scope func(prefix string) (store.Backend, error)

	// late reports how much more real time a real-time fixture's case has
	// taken so far than it asked Advance for (sleep overshoot plus the
	// latency of every call); reported durations may be off by that much on
	// top of Slack. nil for an exact clock.
	late func() time.Duration
}

// instrument wraps a real-time fixture's Advance to measure, from the
// fixture's creation on, the real time beyond what was asked. A fixture
// with Slack 0 (an exact clock) is left alone.
func instrument(nf NewFunc) NewFunc {
	return func(t *testing.T) Fixture {
		f := nf(t)
		if f.Advance == nil || f.Slack == 0 || f.late != nil {
			return f
		}
		var real clock.Real
		start, asked, adv := real.Now(), new(atomic.Int64), f.Advance
		f.Advance = func(d time.Duration) {
			adv(d)
			asked.Add(int64(d))
		}
		f.late = func() time.Duration {
			return time.Duration(max(0, real.Now()-start-asked.Load()))
		}
		return f
	}
}

// NewFunc returns a fresh fixture. It registers any cleanup with t.
type NewFunc func(t *testing.T) Fixture

func (f *Fixture) unit() time.Duration {
	if f.Unit <= 0 {
		return time.Second
	}
	return f.Unit
}

// Embedded is a NewFunc for the embedded engine on a manual clock, with no
// background expiry goroutine. The adapters' own tests run their suites on
// it.
func Embedded(t *testing.T) Fixture {
	t.Helper()
	b, clk := NewEmbedded(t)
	return Fixture{
		Backend: b,
		Advance: func(d time.Duration) { clk.Advance(d) },
		Scope: func(prefix string) (store.Backend, error) {
			s, err := embedded.New(embedded.Config{Engine: b.Engine(), Clock: clk, Prefix: prefix})
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	}
}

// NewEmbedded returns an embedded backend on a fresh engine and the manual
// clock both use (starting at 2026-01-01 UTC). The engine is closed when t
// ends.
func NewEmbedded(t testing.TB) (*embedded.Backend, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := engine.New(engine.Config{Clock: clk, ExpiryInterval: -1, Shards: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	b, err := embedded.New(embedded.Config{Engine: e, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return b, clk
}

// SleepAdvance is an Advance for a backend on real time: it sleeps d. It
// never moves time by less than asked (sleeps overshoot; the suite adds
// Slack wherever a case sits exactly on a deadline, and the time spent
// beyond what was asked to every duration check's tolerance).
func SleepAdvance(d time.Duration) { time.Sleep(d) }

// needTime skips t if f cannot advance time.
func needTime(t *testing.T, f Fixture) {
	t.Helper()
	if f.Advance == nil {
		t.Skip("backend clock cannot be advanced")
	}
}

// durEq reports whether got is want within f's slack.
func (f *Fixture) tolerance() time.Duration {
	tol := f.Slack
	if f.late != nil {
		tol += f.late()
	}
	return tol
}

func (f *Fixture) durEq(got, want time.Duration) bool {
	d, tol := got-want, f.tolerance()
	return d <= tol && -d <= tol
}

func (f *Fixture) checkDur(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if !f.durEq(got, want) {
		t.Errorf("%s: got %v, want %v (tolerance %v)", what, got, want, f.tolerance())
	}
}
