package cas_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/cas"
	"github.com/tidekv/tide/engine"
)

// TestTxnEdges: what Txn's docs promise, at the edges.
func TestTxnEdges(t *testing.T) {
	t.Run("empty commit", func(t *testing.T) {
		e, _ := newEngine(t)
		ok, err := cas.Begin(e).Commit()
		if !ok || err != nil {
			t.Errorf("Commit of an empty Txn = %v, %v; want true, nil", ok, err)
		}
	})
	t.Run("values are copied both ways", func(t *testing.T) {
		e, _ := newEngine(t)
		e.Set("a", []byte("one"))
		tx := cas.Begin(e)
		v, _ := tx.Get("a")
		v[0] = 'X' // the caller's copy
		buf := []byte("two")
		tx.Set("b", buf)
		buf[0] = 'X'
		got, ok := tx.Get("b")
		if string(got) != "two" || !ok {
			t.Errorf("buffered b = %q, %v; want \"two\", true", got, ok)
		}
		got[0] = 'Y'
		if ok, err := tx.Commit(); !ok || err != nil {
			t.Fatalf("Commit = %v, %v", ok, err)
		}
		for k, want := range map[string]string{"a": "one", "b": "two"} {
			if v, _ := e.Get(k); string(v) != want {
				t.Errorf("%s = %q, want %q", k, v, want)
			}
		}
	})
	t.Run("own writes and deletes", func(t *testing.T) {
		e, _ := newEngine(t)
		e.Set("a", []byte("1"))
		tx := cas.Begin(e)
		tx.Delete("a")
		if v, ok := tx.Get("a"); ok || v != nil {
			t.Errorf("Get after buffered Delete = %q, %v; want a miss", v, ok)
		}
		tx.Set("a", []byte("2"))
		if v, ok := tx.Get("a"); !ok || string(v) != "2" {
			t.Errorf("Get after Delete then Set = %q, %v; want \"2\"", v, ok)
		}
		tx.Delete("missing")
		if ok, err := tx.Commit(); !ok || err != nil {
			t.Fatalf("Commit = %v, %v", ok, err)
		}
		if v, _ := e.Get("a"); string(v) != "2" {
			t.Errorf("a = %q, want \"2\" (last buffered write wins)", v)
		}
	})
	t.Run("bad TTLs and keys fail the commit, nothing written", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			buf  func(tx *cas.Txn)
			want error
		}{
			{"SetTTL 0", func(tx *cas.Txn) { tx.SetTTL("b", []byte("x"), 0) }, engine.ErrInvalidTTL},
			{"SetTTL -2", func(tx *cas.Txn) { tx.SetTTL("b", []byte("x"), -2) }, engine.ErrInvalidTTL},
			{"SetTTL overflow", func(tx *cas.Txn) { tx.SetTTL("b", []byte("x"), math.MaxInt64) }, engine.ErrInvalidTTL},
			{"Set huge key", func(tx *cas.Txn) { tx.Set(strings.Repeat("k", engine.DefaultMaxKeySize+1), nil) }, engine.ErrKeyTooLarge},
			{"Watch huge key", func(tx *cas.Txn) { tx.Watch(strings.Repeat("k", engine.DefaultMaxKeySize+1)) }, engine.ErrKeyTooLarge},
			{"Get huge key", func(tx *cas.Txn) { tx.Get(strings.Repeat("k", engine.DefaultMaxKeySize+1)) }, engine.ErrKeyTooLarge},
		} {
			e, _ := newEngine(t)
			e.Set("a", []byte("1"))
			tx := cas.Begin(e)
			tx.Set("a", []byte("2"))
			tt.buf(tx)
			if ok, err := tx.Commit(); ok || !errors.Is(err, tt.want) {
				t.Errorf("%s: Commit = %v, %v; want false, %v", tt.name, ok, err, tt.want)
			}
			if v, _ := e.Get("a"); string(v) != "1" {
				t.Errorf("%s: a = %q after a failed commit, want \"1\"", tt.name, v)
			}
			err := cas.Transact(e, cas.Options{}, func(tx *cas.Txn) error { tt.buf(tx); return nil })
			if !errors.Is(err, tt.want) {
				t.Errorf("%s: Transact = %v, want %v", tt.name, err, tt.want)
			}
		}
	})
	t.Run("closed engine", func(t *testing.T) {
		e, _ := newEngine(t)
		e.Set("a", []byte("1"))
		tx := cas.Begin(e)
		tx.Get("a")
		e.Close()
		if ok, err := tx.Commit(); ok || !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Commit after Close = %v, %v; want false, ErrClosed", ok, err)
		}
		if err := cas.Transact(e, cas.Options{}, func(tx *cas.Txn) error { tx.Set("a", nil); return nil }); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Transact after Close = %v, want ErrClosed", err)
		}
		if _, err := cas.Update(e, "a", incr, cas.Options{TTL: engine.NoTTL}); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Update after Close = %v, want ErrClosed", err)
		}
	})
}

// TestFnErrorsReturnedAsIs: an error from fn, ErrAbort wrapped or another,
// comes back unchanged (the same value), and nothing is written.
func TestFnErrorsReturnedAsIs(t *testing.T) {
	e, _ := newEngine(t)
	e.Set("k", []byte("1"))
	wrapped := fmt.Errorf("no funds: %w", cas.ErrAbort)
	other := errors.New("mine")
	for _, want := range []error{cas.ErrAbort, wrapped, other} {
		_, err := cas.Update(e, "k", func([]byte, bool) ([]byte, error) { return []byte("x"), want }, cas.Options{TTL: engine.NoTTL})
		if err != want {
			t.Errorf("Update returned %v, want %v itself", err, want)
		}
		err = cas.Transact(e, cas.Options{}, func(tx *cas.Txn) error { tx.Set("k", []byte("x")); return want })
		if err != want {
			t.Errorf("Transact returned %v, want %v itself", err, want)
		}
	}
	if v, _ := e.Get("k"); string(v) != "1" {
		t.Errorf("k = %q, want \"1\"", v)
	}
	if !cas.IsConflict(fmt.Errorf("x: %w", cas.ErrConflict)) || cas.IsConflict(nil) || cas.IsConflict(cas.ErrAbort) {
		t.Error("IsConflict misclassifies")
	}
	for _, err := range []error{cas.ErrConflict, cas.ErrAbort} {
		if !strings.HasPrefix(err.Error(), "tide: ") {
			t.Errorf("%q lacks the \"tide: \" prefix", err)
		}
	}
}

// TestUpdateSeesWhatItKeeps: old is a copy fn may keep and change; the
// TTL a created key gets and the TTL an existing one keeps.
func TestUpdateSeesWhatItKeeps(t *testing.T) {
	e, clk := newEngine(t)
	e.SetTTL("k", []byte("abc"), time.Minute)
	var kept []byte
	res, err := cas.Update(e, "k", func(old []byte, exists bool) ([]byte, error) {
		kept = old
		old[0] = 'X' // a copy: the engine's value must not change
		return []byte("new"), nil
	}, cas.Options{TTL: time.Hour})
	if err != nil || string(res.Value) != "new" {
		t.Fatalf("Update = %+v, %v", res, err)
	}
	it, _ := e.GetItem("k")
	if string(it.Value) != "new" || it.Version != res.Version || it.TTL != time.Minute {
		t.Errorf("stored %+v, want new at version %d, TTL 1m kept", it, res.Version)
	}
	e.Set("k", []byte("zzz"))
	if string(kept) != "Xbc" {
		t.Errorf("kept old = %q, want \"Xbc\" (untouched by later writes)", kept)
	}
	// Expired between the read and the write: created again with o.TTL.
	e.SetTTL("k", []byte("1"), time.Second)
	res, err = cas.Update(e, "k", func(old []byte, exists bool) ([]byte, error) {
		if exists {
			clk.Advance(time.Second) // the key is due when Update writes
		}
		return incr(old, exists)
	}, cas.Options{TTL: time.Hour})
	if it, _ := e.GetItem("k"); err != nil || string(it.Value) != "1" || it.TTL != time.Hour {
		t.Errorf("Update across expiry = %+v, %v; stored %+v, want \"1\" with TTL 1h", res, err, it)
	}
}

// TestTxnWatchRules pins which version a Txn checks for each key: the one
// first read or watched (a later Get or Watch does not refresh it), and
// none for a key the Txn wrote before reading it (its reads come from the
// buffer, and the commit overwrites the key whatever happened to it).
func TestTxnWatchRules(t *testing.T) {
	tests := []struct {
		name string
		run  func(e *engine.Engine, tx *cas.Txn)
		want bool
	}{
		{"Get, changed, Get again", func(e *engine.Engine, tx *cas.Txn) {
			tx.Get("a")
			e.Set("a", []byte("x"))
			if v, _ := tx.Get("a"); string(v) != "x" {
				t.Errorf("second Get = %q, want the current \"x\"", v)
			}
		}, false},
		{"Get, changed, Watch", func(e *engine.Engine, tx *cas.Txn) {
			tx.Get("a")
			e.Set("a", []byte("x"))
			tx.Watch("a")
		}, false},
		{"Watch missing, created", func(e *engine.Engine, tx *cas.Txn) {
			tx.Watch("new")
			e.Set("new", []byte("x"))
		}, false},
		{"Watch, TTL changed only", func(e *engine.Engine, tx *cas.Txn) {
			tx.Watch("a")
			e.Expire("a", time.Hour, engine.ExpireConditionAlways)
		}, true},
		{"Set then Get, changed", func(e *engine.Engine, tx *cas.Txn) {
			tx.Set("a", []byte("mine"))
			if v, ok := tx.Get("a"); string(v) != "mine" || !ok {
				t.Errorf("Get of a buffered write = %q, %v", v, ok)
			}
			e.Set("a", []byte("x"))
		}, true},
		{"Delete then Get, changed", func(e *engine.Engine, tx *cas.Txn) {
			tx.Delete("a")
			tx.Get("a")
			e.Set("a", []byte("x"))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newEngine(t)
			e.Set("a", []byte("1"))
			tx := cas.Begin(e)
			tt.run(e, tx)
			tx.Set("b", []byte("done"))
			ok, err := tx.Commit()
			if ok != tt.want || err != nil {
				t.Errorf("Commit = %v, %v; want %v, nil", ok, err, tt.want)
			}
		})
	}
}

// TestNegativeAttemptsRefused: Attempts bounds the tries, and 0 means
// DefaultAttempts; a negative count (say, retries left computed as
// budget - used after the budget ran out) is not "the default, 64 more
// tries" but an error wrapping engine.ErrInvalidOptions, before fn runs,
// with nothing written, as a TTL computed as 0 is ErrInvalidTTL and not
// "forever".
func TestNegativeAttemptsRefused(t *testing.T) {
	e, _ := newEngine(t)
	e.Set("k", []byte("1"))
	for _, n := range []int{-1, math.MinInt} {
		called := false
		_, err := cas.Update(e, "k", func(old []byte, exists bool) ([]byte, error) {
			called = true
			return incr(old, exists)
		}, cas.Options{Attempts: n, TTL: engine.NoTTL})
		if !errors.Is(err, engine.ErrInvalidOptions) || called {
			t.Errorf("Update with Attempts %d: got (%v, fn called %v), want ErrInvalidOptions before fn", n, err, called)
		}
		called = false
		err = cas.Transact(e, cas.Options{Attempts: n}, func(tx *cas.Txn) error {
			called = true
			tx.Set("k", []byte("x"))
			return nil
		})
		if !errors.Is(err, engine.ErrInvalidOptions) || called {
			t.Errorf("Transact with Attempts %d: got (%v, fn called %v), want ErrInvalidOptions before fn", n, err, called)
		}
	}
	if v, _ := e.Get("k"); string(v) != "1" {
		t.Errorf("k = %q, want \"1\"", v)
	}
	// 0 is the default, 1 is one try.
	calls := 0
	_, err := cas.Update(e, "k", func([]byte, bool) ([]byte, error) {
		calls++
		e.Set("k", []byte("other"))
		return []byte("mine"), nil
	}, cas.Options{TTL: engine.NoTTL})
	if !errors.Is(err, cas.ErrConflict) || calls != cas.DefaultAttempts {
		t.Errorf("Update with Attempts 0: %v after %d calls, want ErrConflict after %d", err, calls, cas.DefaultAttempts)
	}
}
