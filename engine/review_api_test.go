package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
)

// Adversarial review of the public API (review-api).

// TestReviewAPIClockBeforeEpoch: a manual clock that reads before 1970
// (time.Time{} does) must not freeze the engine's time: a key written
// with TTL d is gone d later. Refusing such a clock at New
// (ErrInvalidConfig) keeps the promise too; a clock at the epoch
// (clock.Manual's zero value) must be accepted.
func TestReviewAPIClockBeforeEpoch(t *testing.T) {
	for _, start := range []time.Time{{}, time.Unix(-100, 0), time.Unix(0, -1), time.Unix(0, 0)} {
		t.Run(fmt.Sprint(start.UnixNano()), func(t *testing.T) {
			clk := clock.NewManual(start)
			e, err := New(Config{Clock: clk, ExpiryInterval: -1})
			if err != nil {
				if !errors.Is(err, ErrInvalidConfig) || start.UnixNano() >= 0 {
					t.Fatalf("New: err = %v, want nil or ErrInvalidConfig", err)
				}
				return
			}
			defer e.Close()
			if _, err := e.SetTTL("k", []byte("v"), time.Second); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Second)
			if _, ok := e.Get("k"); ok {
				t.Fatalf("Get 2s after a write with TTL 1s: got a hit, want a miss")
			}
			if d, ok := e.TTL("k"); ok {
				t.Fatalf("TTL 2s after a write with TTL 1s: got %v, want a miss", d)
			}
		})
	}
}

// TestReviewAPIOpsInsideClose: an operation that passed the engine's
// closed gate before Close began and reaches its shard after Close
// cleared it must report ErrClosed, as SetWith and Incr do, not a miss
// (false, nil) that says the key does not exist. The test opens the gate
// again after Close to run the operations in that window.
func TestReviewAPIOpsInsideClose(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		if _, err := e.SetTTL(k, []byte("1"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	e.closed.Store(false) // an operation already past the gate
	defer e.closed.Store(true)
	ops := []struct {
		name string
		do   func() error
	}{
		{"SetWith", func() error { _, _, err := e.SetWith("a", []byte("x"), SetOptions{TTL: NoTTL}); return err }},
		{"Incr", func() error { _, err := e.Incr("b"); return err }},
		{"Commit", func() error { _, _, err := e.Commit(nil, []Op{{Key: "c", Delete: true}}); return err }},
		{"Expire", func() error { _, err := e.Expire("a", time.Minute, ExpireConditionAlways); return err }},
		{"ExpireAt", func() error { _, err := e.ExpireAt("b", t0.Add(time.Minute), ExpireConditionAlways); return err }},
		{"Persist", func() error { _, err := e.Persist("c"); return err }},
		{"Pin", func() error { _, err := e.Pin("d", true); return err }},
		{"GetAndExpire", func() error { _, _, err := e.GetAndExpire("e", time.Minute); return err }},
		{"DeleteWith", func() error { _, _, err := e.DeleteWith("f", DeleteOptions{}); return err }},
	}
	for _, op := range ops {
		if err := op.do(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a shard Close has cleared: err = %v, want ErrClosed", op.name, err)
		}
	}
}
