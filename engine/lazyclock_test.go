package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
)

// countingClock is a manual clock that counts its readings.
type countingClock struct {
	*clock.Manual
	n atomic.Int64
}

func (c *countingClock) Now() int64 { c.n.Add(1); return c.Manual.Now() }

// TestWriteReadsTheClockOnlyWhenItNeedsTheTime: a Set, Delete or Persist reads the
// clock once if the time decides something (a TTL to set, a key with a
// deadline, room to make under MaxBytes), and not at all otherwise.
func TestWriteReadsTheClockOnlyWhenItNeedsTheTime(t *testing.T) {
	val := make([]byte, 16)
	tests := []struct {
		name  string
		cfg   Config
		setup func(e *Engine)
		write func(e *Engine) error
		want  int64
	}{
		{"new key, no TTL", Config{}, nil,
			func(e *Engine) error { _, err := e.Set("k", val); return err }, 0},
		{"overwrite, no TTL", Config{}, func(e *Engine) { e.Set("k", val) },
			func(e *Engine) error { _, err := e.Set("k", val); return err }, 0},
		{"overwrite with the same TTL rule, KeepTTL", Config{}, func(e *Engine) { e.Set("k", val) },
			func(e *Engine) error { _, _, err := e.SetWith("k", val, SetOptions{KeepTTL: true}); return err }, 0},
		{"a TTL to set", Config{}, nil,
			func(e *Engine) error { _, err := e.SetTTL("k", val, time.Minute); return err }, 1},
		{"a key with a deadline", Config{}, func(e *Engine) { e.SetTTL("k", val, time.Minute) },
			func(e *Engine) error { _, err := e.Set("k", val); return err }, 1},
		{"delete, no TTL", Config{}, func(e *Engine) { e.Set("k", val) },
			func(e *Engine) error { e.Delete("k"); return nil }, 0},
		{"delete of a key with a deadline", Config{}, func(e *Engine) { e.SetTTL("k", val, time.Minute) },
			func(e *Engine) error { e.Delete("k"); return nil }, 1},
		{"persist of a key without TTL", Config{}, func(e *Engine) { e.Set("k", val) },
			func(e *Engine) error { _, err := e.Persist("k"); return err }, 0},
		{"persist of a key with a deadline", Config{}, func(e *Engine) { e.SetTTL("k", val, time.Minute) },
			func(e *Engine) error { _, err := e.Persist("k"); return err }, 1},
		{"room to make", Config{Shards: 1, MaxBytes: 2 * (1 + 16 + EntryOverhead), Policy: evict.AllKeysLRU},
			func(e *Engine) { e.Set("a", val); e.Set("b", val) },
			func(e *Engine) error { _, err := e.Set("c", val); return err }, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &countingClock{Manual: clock.NewManual(t0)}
			tc.cfg.Clock = clk
			e, _ := newTest(t, tc.cfg)
			if tc.setup != nil {
				tc.setup(e)
			}
			before := clk.n.Load()
			if err := tc.write(e); err != nil {
				t.Fatal(err)
			}
			if got := clk.n.Load() - before; got != tc.want {
				t.Errorf("clock readings = %d, want %d", got, tc.want)
			}
			mustCheck(t, e)
		})
	}
}
