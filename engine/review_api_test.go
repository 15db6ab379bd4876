package engine

import (
	"errors"
	"testing"
	"time"
)

// Adversarial review of the public API (review-api).

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
