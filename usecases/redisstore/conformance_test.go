package redisstore_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// Real time on Redis: every duration in the suites is a multiple of
// testUnit, and reported durations may be off by testSlack (millisecond
// TTLs) plus the real time a case spent beyond what it advanced (sleep
// overshoot, round trips, stalls on a loaded machine), which the suites
// measure themselves.
//
// Override with REDISSTORE_TEST_UNIT (a Go duration; Slack is a fifth of
// it) on a machine that is faster or more loaded.
var testUnit, testSlack = func() (time.Duration, time.Duration) {
	u := 200 * time.Millisecond
	if d, err := time.ParseDuration(os.Getenv("REDISSTORE_TEST_UNIT")); err == nil && d > 0 {
		u = d
	}
	return u, u / 5
}()

var fixtureSeq atomic.Int64

// newFixtureFunc returns a storetest.NewFunc on client: each fixture is a
// fresh keyspace, a unique key prefix (starting with tag) on the shared
// server or cluster, on real time.
func newFixtureFunc(client redis.UniversalClient, tag string) storetest.NewFunc {
	return func(t *testing.T) storetest.Fixture {
		b, err := redisstore.New(redisstore.Config{Client: client, Prefix: fmt.Sprintf("%s%d:", tag, fixtureSeq.Add(1))})
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Fixture{
			Backend: b,
			Advance: storetest.SleepAdvance,
			Unit:    testUnit,
			Slack:   testSlack,
			Scope: func(prefix string) (store.Backend, error) {
				b, err := redisstore.New(redisstore.Config{Client: client, Prefix: prefix})
				if err != nil {
					return nil, err
				}
				return b, nil
			},
		}
	}
}

// The four topology suites (single node: TestConformance and TestUseCases;
// TestCluster; TestSentinel) run in parallel with each other, after the
// sequential tests (the fault tests, whose timing they would disturb):
// they spend most of their time sleeping.

func TestConformance(t *testing.T) {
	t.Parallel()
	srv := redisserver.Start(t)
	storetest.Run(t, newFixtureFunc(srv.Client(t), "t"))
}

// TestUseCases runs the adapters' contract suites, written once against
// store.Backend, on a single Redis node.
func TestUseCases(t *testing.T) {
	t.Parallel()
	srv := redisserver.Start(t)
	storetest.RunUseCases(t, newFixtureFunc(srv.Client(t), "u"))
}
