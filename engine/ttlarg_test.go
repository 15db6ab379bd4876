package engine

import (
	"errors"
	"testing"
	"time"
)

// TestComputedZeroTTLIsNotForever guards the promise that a key never
// expires only when the caller says so (NoTTL): a TTL of 0 — typically
// computed from a deadline that just passed, or rounded down — and any
// negative other than NoTTL is ErrInvalidTTL on every path that takes a
// TTL, and leaves the existing key exactly as it was.
func TestComputedZeroTTLIsNotForever(t *testing.T) {
	paths := []struct {
		name  string
		write func(e *Engine, ttl time.Duration) error
	}{
		{"SetWith", func(e *Engine, ttl time.Duration) error {
			_, _, err := e.SetWith("k", []byte("new"), SetOptions{TTL: ttl})
			return err
		}},
		{"SetWith/IfPresent", func(e *Engine, ttl time.Duration) error {
			_, _, err := e.SetWith("k", []byte("new"), SetOptions{TTL: ttl, Only: ConditionIfPresent})
			return err
		}},
		{"SetWith/IfVersion", func(e *Engine, ttl time.Duration) error {
			_, _, err := e.SetWith("k", []byte("new"), SetOptions{TTL: ttl, IfVersion: 1})
			return err
		}},
		{"SetWith/TTLOnCreate", func(e *Engine, ttl time.Duration) error {
			_, _, err := e.SetWith("k", []byte("new"), SetOptions{TTL: ttl, TTLOnCreate: true, KeepTTL: true})
			return err
		}},
		{"SetTTL", func(e *Engine, ttl time.Duration) error { _, err := e.SetTTL("k", []byte("new"), ttl); return err }},
		{"IncrWith", func(e *Engine, ttl time.Duration) error {
			_, err := e.IncrWith("k", 1, IncrOptions{TTL: ttl})
			return err
		}},
		{"Commit", func(e *Engine, ttl time.Duration) error {
			_, _, err := e.Commit(nil, []Op{{Key: "k", Value: []byte("new"), TTL: ttl}})
			return err
		}},
		{"Expire", func(e *Engine, ttl time.Duration) error {
			_, err := e.Expire("k", ttl, ExpireConditionAlways)
			return err
		}},
		{"GetAndExpire", func(e *Engine, ttl time.Duration) error { _, _, err := e.GetAndExpire("k", ttl); return err }},
	}
	for _, p := range paths {
		for _, ttl := range []time.Duration{0, -2, -time.Hour} {
			t.Run(p.name+"/"+ttl.String(), func(t *testing.T) {
				e, _ := newTest(t, Config{})
				v, err := e.SetTTL("k", []byte("1"), time.Hour)
				if err != nil || v != 1 {
					t.Fatal(v, err)
				}
				if err := p.write(e, ttl); !errors.Is(err, ErrInvalidTTL) {
					t.Fatalf("TTL %v: err = %v, want ErrInvalidTTL", ttl, err)
				}
				it, ok := e.GetItem("k")
				if !ok || string(it.Value) != "1" || it.Version != 1 || it.TTL != time.Hour {
					t.Fatalf("after the refused write: %q version %d TTL %v ok=%v; want \"1\" 1 1h", it.Value, it.Version, it.TTL, ok)
				}
			})
		}
	}
}

// TestNoTTLSaysForever guards the other half: NoTTL is how a write asks for
// a key without expiry, on every path that takes a TTL for a write.
func TestNoTTLSaysForever(t *testing.T) {
	writes := []struct {
		name  string
		write func(e *Engine) error
	}{
		{"SetWith", func(e *Engine) error { _, _, err := e.SetWith("k", []byte("1"), SetOptions{TTL: NoTTL}); return err }},
		{"SetWith/TTLOnCreate", func(e *Engine) error {
			_, _, err := e.SetWith("k", []byte("1"), SetOptions{TTL: NoTTL, TTLOnCreate: true})
			return err
		}},
		{"SetWith/KeepTTL", func(e *Engine) error { _, _, err := e.SetWith("k", []byte("1"), SetOptions{KeepTTL: true}); return err }},
		{"IncrWith", func(e *Engine) error { _, err := e.IncrWith("k", 1, IncrOptions{TTL: NoTTL}); return err }},
		{"Commit", func(e *Engine) error {
			_, _, err := e.Commit(nil, []Op{{Key: "k", Value: []byte("1"), TTL: NoTTL}})
			return err
		}},
		{"Set", func(e *Engine) error { _, err := e.Set("k", []byte("1")); return err }},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			e, _ := newTest(t, Config{})
			if err := w.write(e); err != nil {
				t.Fatal(err)
			}
			if ttl, ok := e.TTL("k"); !ok || ttl != NoTTL {
				t.Fatalf("TTL = %v, %v; want NoTTL, true", ttl, ok)
			}
		})
	}
	e, _ := newTest(t, Config{})
	if _, _, err := e.SetWith("k", []byte("1"), SetOptions{KeepTTL: true, TTL: NoTTL}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("KeepTTL with NoTTL: err = %v, want ErrInvalidOptions", err)
	}
}
