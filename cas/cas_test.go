package cas_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/cas"
	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
)

func newEngine(t testing.TB) (*engine.Engine, *clock.Manual) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	e, err := engine.New(engine.Config{Clock: clk, ExpiryInterval: -1, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Check(); err != nil {
			t.Error(err)
		}
		e.Close()
	})
	return e, clk
}

func incr(old []byte, _ bool) ([]byte, error) {
	n, _ := strconv.Atoi(string(old))
	return []byte(strconv.Itoa(n + 1)), nil
}

func TestUpdateConcurrentLosesNothing(t *testing.T) {
	e, _ := newEngine(t)
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := cas.Update(e, "n", incr, cas.Options{Attempts: 1 << 20, TTL: engine.NoTTL}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v, _ := e.Get("n"); string(v) != strconv.Itoa(workers*each) {
		t.Fatalf("got %s want %d", v, workers*each)
	}
}

// TestUpdateTTLIsSaidOnPurpose: Update's TTL must be positive or
// engine.NoTTL whatever the key's state, checked before fn runs: a TTL of
// 0 (the zero Options, or one computed from a deadline that has passed) is
// ErrInvalidTTL with nothing written, never a key that lives forever, and
// it fails on the first call, not only when the key happens to be missing.
func TestUpdateTTLIsSaidOnPurpose(t *testing.T) {
	e, _ := newEngine(t)
	e.SetTTL("present", []byte("1"), time.Minute)
	for _, o := range []cas.Options{{}, {TTL: -2}, {TTL: -time.Second}, {ResetTTL: true}, {TTL: -5, ResetTTL: true}} {
		for _, key := range []string{"missing", "present"} {
			called := false
			_, err := cas.Update(e, key, func(old []byte, exists bool) ([]byte, error) {
				called = true
				return incr(old, exists)
			}, o)
			if !errors.Is(err, engine.ErrInvalidTTL) || called {
				t.Errorf("%+v on %s key: got (%v, fn called %v), want ErrInvalidTTL before fn", o, key, err, called)
			}
		}
	}
	if _, ok := e.Get("missing"); ok {
		t.Error("a refused Update created the key")
	}
	if it, _ := e.GetItem("present"); string(it.Value) != "1" || it.TTL != time.Minute {
		t.Errorf("a refused Update changed the key: got (%q, ttl %v), want (\"1\", 1m)", it.Value, it.TTL)
	}
	for _, c := range []struct {
		o    cas.Options
		want time.Duration
	}{
		{cas.Options{TTL: engine.NoTTL}, engine.NoTTL},
		{cas.Options{TTL: time.Nanosecond}, time.Nanosecond},
		{cas.Options{TTL: time.Hour}, time.Hour},
	} {
		e.Delete("k")
		if _, err := cas.Update(e, "k", incr, c.o); err != nil {
			t.Fatalf("%+v: %v", c.o, err)
		}
		if ttl, _ := e.TTL("k"); ttl != c.want {
			t.Errorf("%+v: created with TTL %v, want %v", c.o, ttl, c.want)
		}
	}
}

func TestUpdateKeepsTTLAndAborts(t *testing.T) {
	e, _ := newEngine(t)
	e.SetTTL("k", []byte("1"), time.Minute)
	if _, err := cas.Update(e, "k", incr, cas.Options{TTL: engine.NoTTL}); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := e.TTL("k"); ttl != time.Minute {
		t.Fatalf("TTL after Update: got %v want 1m", ttl)
	}
	_, err := cas.Update(e, "k", func([]byte, bool) ([]byte, error) { return nil, cas.ErrAbort }, cas.Options{TTL: engine.NoTTL})
	if !errors.Is(err, cas.ErrAbort) {
		t.Fatalf("got %v want ErrAbort", err)
	}
	if v, _ := e.Get("k"); string(v) != "2" {
		t.Fatalf("aborted update wrote: got %s want 2", v)
	}
}

func TestUpdateConflictBounded(t *testing.T) {
	e, _ := newEngine(t)
	e.Set("k", []byte("0"))
	calls := 0
	_, err := cas.Update(e, "k", func(old []byte, _ bool) ([]byte, error) {
		calls++
		e.Set("k", []byte("interfering")) // always change it under the update
		return []byte("mine"), nil
	}, cas.Options{Attempts: 3, TTL: engine.NoTTL})
	if !errors.Is(err, cas.ErrConflict) || calls != 3 {
		t.Fatalf("got %v after %d calls, want ErrConflict after 3", err, calls)
	}
}

func TestTxnAbortsOnChangedExpiredOrEvicted(t *testing.T) {
	tests := []struct {
		name      string
		interfere func(e *engine.Engine, clk *clock.Manual)
		want      bool
	}{
		{"untouched", func(*engine.Engine, *clock.Manual) {}, true},
		{"changed", func(e *engine.Engine, _ *clock.Manual) { e.Set("a", []byte("x")) }, false},
		{"rewritten same value", func(e *engine.Engine, _ *clock.Manual) { e.Set("a", []byte("1")) }, false},
		{"deleted and recreated", func(e *engine.Engine, _ *clock.Manual) { e.Delete("a"); e.Set("a", []byte("1")) }, false},
		{"expired", func(e *engine.Engine, clk *clock.Manual) { clk.Advance(time.Hour) }, false},
		{"watched-absent created", func(e *engine.Engine, _ *clock.Manual) { e.Set("c", []byte("new")) }, false},
		{"TTL change only", func(e *engine.Engine, _ *clock.Manual) { e.Expire("a", 2*time.Minute, engine.ExpireConditionAlways) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, clk := newEngine(t)
			e.SetTTL("a", []byte("1"), time.Minute)
			e.Set("b", []byte("2"))
			tx := cas.Begin(e)
			a, _ := tx.Get("a")
			b, _ := tx.Get("b")
			tx.Watch("c")
			tt.interfere(e, clk)
			tx.Set("a", []byte(string(a)+"!"))
			tx.Set("b", []byte(string(b)+"!"))
			ok, err := tx.Commit()
			if err != nil || ok != tt.want {
				t.Fatalf("Commit: got %v,%v want %v", ok, err, tt.want)
			}
			vb, _ := e.Get("b")
			if wantB := map[bool]string{true: "2!", false: "2"}[tt.want]; string(vb) != wantB {
				t.Fatalf("b = %q want %q (all-or-nothing)", vb, wantB)
			}
		})
	}
}

func TestTransactTransfers(t *testing.T) {
	e, _ := newEngine(t)
	accts := []string{"x", "y", "z"}
	for _, a := range accts {
		e.Set(a, []byte("100"))
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				from, to := accts[(w+i)%3], accts[(w+i+1)%3]
				err := cas.Transact(e, cas.Options{Attempts: 1 << 20}, func(tx *cas.Txn) error {
					fv, _ := tx.Get(from)
					tv, _ := tx.Get(to)
					f, _ := strconv.Atoi(string(fv))
					g, _ := strconv.Atoi(string(tv))
					if f == 0 {
						return nil // nothing to move; commit no writes
					}
					tx.Set(from, []byte(strconv.Itoa(f-1)))
					tx.Set(to, []byte(strconv.Itoa(g+1)))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	sum := 0
	for _, a := range accts {
		v, _ := e.Get(a)
		n, _ := strconv.Atoi(string(v))
		if n < 0 {
			t.Fatalf("%s went negative: %d", a, n)
		}
		sum += n
	}
	if sum != 300 {
		t.Fatalf("sum = %d want 300", sum)
	}
}

func ExampleUpdate() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()
	e.Set("visits", []byte("41"))
	res, err := cas.Update(e, "visits", func(old []byte, _ bool) ([]byte, error) {
		n, _ := strconv.Atoi(string(old))
		return []byte(strconv.Itoa(n + 1)), nil
	}, cas.Options{TTL: engine.NoTTL})
	fmt.Println(string(res.Value), err)
	// Output: 42 <nil>
}

func ExampleTransact() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()
	e.Set("alice", []byte("10"))
	e.Set("bob", []byte("0"))
	err := cas.Transact(e, cas.Options{}, func(tx *cas.Txn) error {
		a, _ := tx.Get("alice")
		b, _ := tx.Get("bob")
		na, _ := strconv.Atoi(string(a))
		nb, _ := strconv.Atoi(string(b))
		if na < 3 {
			return cas.ErrAbort
		}
		tx.Set("alice", []byte(strconv.Itoa(na-3)))
		tx.Set("bob", []byte(strconv.Itoa(nb+3)))
		return nil
	})
	a, _ := e.Get("alice")
	b, _ := e.Get("bob")
	fmt.Println(string(a), string(b), err)
	// Output: 7 3 <nil>
}
