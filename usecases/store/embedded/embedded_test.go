package embedded_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Embedded)
}

// TestUseCasesRealTime runs the adapters' suites as a Redis backend would
// (real clock, sleeping Advance), to keep them portable.
func TestUseCasesRealTime(t *testing.T) {
	if os.Getenv("TIDE_REALTIME") == "" {
		t.Skip("sleeps for tens of seconds; set TIDE_REALTIME=1 to run")
	}
	storetest.RunUseCases(t, realTime)
}

// TestConformanceFrozenClock runs the suite as a backend whose clock cannot
// be moved would: the time-dependent cases are skipped.
func TestConformanceFrozenClock(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Fixture {
		f := storetest.Embedded(t)
		f.Advance = nil
		return f
	})
}

// TestConformanceRealTime runs the suite as a Redis backend would: on the
// real clock, advancing time by sleeping, with a small unit and a slack.
func TestConformanceRealTime(t *testing.T) {
	if os.Getenv("TIDE_REALTIME") == "" {
		t.Skip("sleeps for tens of seconds; set TIDE_REALTIME=1 to run")
	}
	storetest.Run(t, realTime)
}

func realTime(t *testing.T) storetest.Fixture {
	e, err := engine.New(engine.Config{Shards: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	b, err := embedded.New(embedded.Config{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	return storetest.Fixture{Backend: b, Advance: storetest.SleepAdvance, Unit: 100 * time.Millisecond, Slack: 25 * time.Millisecond}
}

func TestGetAfterCloseIsErrClosed(t *testing.T) {
	e, err := engine.New(engine.Config{ExpiryInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := embedded.New(embedded.Config{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, ok, err := b.Get(ctx, "missing"); ok || err != nil {
		t.Fatalf("Get on open engine: got %v,%v want miss,nil", ok, err)
	}
	e.Close()
	if _, _, err := b.Get(ctx, "missing"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Get after Close: got %v want ErrClosed", err)
	}
}
