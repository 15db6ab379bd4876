package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

// contractOp is one public call on key k, as the "Contract" table of the
// package doc sees it: errs says whether the call has an error result;
// run returns the call's error (nil for a call without one) and whether it
// found, wrote or changed anything.
type contractOp struct {
	name string
	errs bool
	run  func(e *engine.Engine, k string) (hit bool, err error)
}

// contractOps lists every call that takes a key.
func contractOps() []contractOp {
	v := []byte("v")
	at := badStart.Add(time.Minute)
	return []contractOp{
		{"Set", true, func(e *engine.Engine, k string) (bool, error) { _, err := e.Set(k, v); return err == nil, err }},
		{"SetTTL", true, func(e *engine.Engine, k string) (bool, error) {
			_, err := e.SetTTL(k, v, time.Hour)
			return err == nil, err
		}},
		{"SetWith", true, func(e *engine.Engine, k string) (bool, error) {
			_, ok, err := e.SetWith(k, v, engine.SetOptions{TTL: engine.NoTTL})
			return ok, err
		}},
		{"CompareAndSwap", true, func(e *engine.Engine, k string) (bool, error) {
			_, ok, err := e.CompareAndSwap(k, 1, v)
			return ok, err
		}},
		{"CompareAndSwap MustBeAbsent", true, func(e *engine.Engine, k string) (bool, error) {
			_, ok, err := e.CompareAndSwap(k, engine.MustBeAbsent, v)
			return ok, err
		}},
		{"Incr", true, func(e *engine.Engine, k string) (bool, error) { _, err := e.Incr(k); return err == nil, err }},
		{"Decr", true, func(e *engine.Engine, k string) (bool, error) { _, err := e.Decr(k); return err == nil, err }},
		{"IncrBy", true, func(e *engine.Engine, k string) (bool, error) { _, err := e.IncrBy(k, 2); return err == nil, err }},
		{"DecrBy", true, func(e *engine.Engine, k string) (bool, error) { _, err := e.DecrBy(k, 2); return err == nil, err }},
		{"IncrWith", true, func(e *engine.Engine, k string) (bool, error) {
			_, err := e.IncrWith(k, 1, engine.IncrOptions{TTL: time.Hour})
			return err == nil, err
		}},
		{"Commit write", true, func(e *engine.Engine, k string) (bool, error) {
			_, ok, err := e.Commit(nil, []engine.Op{{Key: k, Value: v, TTL: engine.NoTTL}})
			return ok, err
		}},
		{"Commit delete", true, func(e *engine.Engine, k string) (bool, error) {
			_, ok, err := e.Commit(nil, []engine.Op{{Key: k, Delete: true}})
			return ok, err
		}},
		{"Commit precondition", true, func(e *engine.Engine, k string) (bool, error) {
			_, ok, err := e.Commit([]engine.Precondition{{Key: k, Version: engine.MustBeAbsent}}, nil)
			return ok, err
		}},
		{"Expire", true, func(e *engine.Engine, k string) (bool, error) {
			return e.Expire(k, time.Hour, engine.ExpireConditionAlways)
		}},
		{"ExpireAt", true, func(e *engine.Engine, k string) (bool, error) { return e.ExpireAt(k, at, engine.ExpireConditionAlways) }},
		{"GetAndExpire", true, func(e *engine.Engine, k string) (bool, error) {
			_, ok, err := e.GetAndExpire(k, time.Hour)
			return ok, err
		}},
		{"Get", false, func(e *engine.Engine, k string) (bool, error) { _, ok := e.Get(k); return ok, nil }},
		{"AppendGet", false, func(e *engine.Engine, k string) (bool, error) { _, ok := e.AppendGet(nil, k); return ok, nil }},
		{"GetItem", false, func(e *engine.Engine, k string) (bool, error) {
			it, ok := e.GetItem(k)
			return ok || it.Version != 0 || it.Value != nil, nil
		}},
		{"TTL", false, func(e *engine.Engine, k string) (bool, error) { _, ok := e.TTL(k); return ok, nil }},
		{"Delete", false, func(e *engine.Engine, k string) (bool, error) { return e.Delete(k), nil }},
		{"CompareAndDelete", false, func(e *engine.Engine, k string) (bool, error) { return e.CompareAndDelete(k, 1), nil }},
		{"GetAndDelete", false, func(e *engine.Engine, k string) (bool, error) { _, ok := e.GetAndDelete(k); return ok, nil }},
		{"Persist", true, func(e *engine.Engine, k string) (bool, error) { return e.Persist(k) }},
		{"Pin", true, func(e *engine.Engine, k string) (bool, error) { return e.Pin(k, true) }},
		{"DeleteWith", true, func(e *engine.Engine, k string) (bool, error) {
			_, ok, err := e.DeleteWith(k, engine.DeleteOptions{IfVersion: engine.AnyVersion})
			return ok, err
		}},
	}
}

// contractEngine returns an engine holding "k" (a counter at version 1,
// with a TTL) on a manual clock.
func contractEngine(t *testing.T) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{
		Shards: 2, Clock: clock.NewManual(badStart), ExpiryInterval: -1,
		MaxKeySize: badMaxKey, MaxBytes: 1 << 20, Policy: evict.AllKeysLRU,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.SetTTL("k", []byte("1"), time.Hour); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestContractKeyTooLarge: a key over MaxKeySize is ErrKeyTooLarge on every
// call with an error result and a miss on every other, on an open engine
// and (an invalid argument is reported before ErrClosed) on a closed one.
func TestContractKeyTooLarge(t *testing.T) {
	long := strings.Repeat("x", badMaxKey+1)
	for _, closed := range []bool{false, true} {
		for _, op := range contractOps() {
			name := op.name
			if closed {
				name += " closed"
			}
			t.Run(name, func(t *testing.T) {
				e := contractEngine(t)
				if closed {
					e.Close()
				}
				hit, err := op.run(e, long)
				if op.errs && !errors.Is(err, engine.ErrKeyTooLarge) {
					t.Errorf("error %v, want ErrKeyTooLarge", err)
				}
				if !op.errs && err != nil {
					t.Errorf("error %v from a call without an error result", err)
				}
				if hit {
					t.Error("reported a hit or a change for a key that cannot exist")
				}
				if err := e.Check(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestContractClosed: after Close every call with an error result returns
// ErrClosed and every other reports a miss, for a key that existed before
// Close.
func TestContractClosed(t *testing.T) {
	for _, op := range contractOps() {
		t.Run(op.name, func(t *testing.T) {
			e := contractEngine(t)
			e.Close()
			hit, err := op.run(e, "k")
			if op.errs && !errors.Is(err, engine.ErrClosed) {
				t.Errorf("error %v, want ErrClosed", err)
			}
			if !op.errs && err != nil {
				t.Errorf("error %v from a call without an error result", err)
			}
			if hit {
				t.Error("reported a hit or a change on a closed engine")
			}
			if !e.Closed() {
				t.Error("Closed() is false after Close")
			}
		})
	}
}

// TestContractArgumentBeforeClosed: an invalid TTL or option is reported
// as such on a closed engine too (invalid arguments come before ErrClosed).
func TestContractArgumentBeforeClosed(t *testing.T) {
	e := contractEngine(t)
	e.Close()
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"SetTTL 0", second(e.SetTTL("k", nil, 0)), engine.ErrInvalidTTL},
		{"SetWith zero options", third(e.SetWith("k", nil, engine.SetOptions{})), engine.ErrInvalidTTL},
		{"SetWith KeepTTL with TTL", third(e.SetWith("k", nil, engine.SetOptions{KeepTTL: true, TTL: time.Second})), engine.ErrInvalidOptions},
		{"IncrWith zero options", second(e.IncrWith("k", 1, engine.IncrOptions{})), engine.ErrInvalidTTL},
		{"Expire 0", second(e.Expire("k", 0, engine.ExpireConditionAlways)), engine.ErrInvalidTTL},
		{"Expire bad condition", second(e.Expire("k", time.Second, 99)), engine.ErrInvalidOptions},
		{"GetAndExpire NoTTL", third(e.GetAndExpire("k", engine.NoTTL)), engine.ErrInvalidTTL},
		{"Commit 0 TTL", third(e.Commit(nil, []engine.Op{{Key: "k"}})), engine.ErrInvalidTTL},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s on a closed engine: %v, want %v", c.name, c.err, c.want)
		}
	}
}

func second[A any](_ A, err error) error        { return err }
func third[A, B any](_ A, _ B, err error) error { return err }

// TestContractVersions: 0 is no key's version. AnyVersion (SetOptions) puts
// no condition; MustBeAbsent (Precondition) holds exactly for an absent key
// and, given to CompareAndSwap or CompareAndDelete, matches no key; a miss
// reports version 0.
func TestContractVersions(t *testing.T) {
	e := contractEngine(t)
	it, ok := e.GetItem("k")
	if !ok || it.Version == 0 {
		t.Fatalf("GetItem(k) = %+v %v: a live key has a non-zero version", it, ok)
	}
	if it, ok := e.GetItem("absent"); ok || it.Version != 0 {
		t.Errorf("GetItem(absent) = %+v %v, want version 0 and a miss", it, ok)
	}

	// AnyVersion: the write happens whatever the version (and for an
	// absent key).
	v1, ok, err := e.SetWith("k", []byte("2"), engine.SetOptions{IfVersion: engine.AnyVersion, KeepTTL: true})
	if err != nil || !ok || v1 == it.Version {
		t.Fatalf("SetWith AnyVersion on k = %d %v %v", v1, ok, err)
	}
	if _, ok, err := e.SetWith("new", []byte("x"), engine.SetOptions{IfVersion: engine.AnyVersion, TTL: engine.NoTTL}); err != nil || !ok {
		t.Fatalf("SetWith AnyVersion on an absent key = %v %v", ok, err)
	}

	// MustBeAbsent as a precondition: holds for an absent key only.
	for _, c := range []struct {
		key  string
		want bool
	}{{"absent", true}, {"k", false}} {
		_, ok, err := e.Commit([]engine.Precondition{{Key: c.key, Version: engine.MustBeAbsent}}, nil)
		if err != nil || ok != c.want {
			t.Errorf("Commit precondition MustBeAbsent on %s = %v %v, want %v", c.key, ok, err, c.want)
		}
	}

	// MustBeAbsent as a compare argument: matches no key, present or not.
	for _, key := range []string{"k", "absent"} {
		if _, ok, err := e.CompareAndSwap(key, engine.MustBeAbsent, []byte("x")); ok || err != nil {
			t.Errorf("CompareAndSwap(%s, MustBeAbsent) = %v %v, want false nil", key, ok, err)
		}
		if e.CompareAndDelete(key, engine.MustBeAbsent) {
			t.Errorf("CompareAndDelete(%s, MustBeAbsent) deleted", key)
		}
	}
	if _, ok := e.Get("absent"); ok {
		t.Error("a compare with MustBeAbsent created the key")
	}
	if it, ok := e.GetItem("k"); !ok || it.Version != v1 {
		t.Errorf("k after the compares = %+v %v, want version %d", it, ok, v1)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCommitOpOptionsAreSetOptions: an Op's option fields mean what
// SetOptions' do: TTLOnCreate sets a TTL only on create, Only and
// IfVersion are conditions (on deletes too), and an op whose condition
// fails makes the whole commit not happen, changing nothing.
func TestCommitOpOptionsAreSetOptions(t *testing.T) {
	cases := []struct {
		name      string
		op        func(ver uint64) engine.Op
		committed bool
		wantTTL   time.Duration // of "k" afterwards; 0: gone
	}{
		{"TTLOnCreate on existing keeps the TTL", func(uint64) engine.Op {
			return engine.Op{Key: "k", Value: []byte("2"), TTL: time.Minute, TTLOnCreate: true}
		}, true, time.Hour},
		{"IfPresent on existing", func(uint64) engine.Op {
			return engine.Op{Key: "k", Value: []byte("2"), TTL: engine.NoTTL, Only: engine.ConditionIfPresent}
		}, true, engine.NoTTL},
		{"IfAbsent on existing", func(uint64) engine.Op {
			return engine.Op{Key: "k", Value: []byte("2"), TTL: engine.NoTTL, Only: engine.ConditionIfAbsent}
		}, false, time.Hour},
		{"IfVersion matching", func(v uint64) engine.Op {
			return engine.Op{Key: "k", Value: []byte("2"), KeepTTL: true, IfVersion: v}
		}, true, time.Hour},
		{"IfVersion stale", func(v uint64) engine.Op {
			return engine.Op{Key: "k", Value: []byte("2"), KeepTTL: true, IfVersion: v + 1}
		}, false, time.Hour},
		{"Delete IfVersion matching", func(v uint64) engine.Op { return engine.Op{Key: "k", Delete: true, IfVersion: v} }, true, 0},
		{"Delete IfVersion stale", func(v uint64) engine.Op { return engine.Op{Key: "k", Delete: true, IfVersion: v + 1} }, false, time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := contractEngine(t)
			before, _ := e.GetItem("k")
			// A second op on another key shows all-or-nothing.
			_, ok, err := e.Commit(nil, []engine.Op{c.op(before.Version), {Key: "other", Value: []byte("x"), TTL: engine.NoTTL}})
			if err != nil || ok != c.committed {
				t.Fatalf("Commit = %v %v, want %v nil", ok, err, c.committed)
			}
			if _, wrote := e.Get("other"); wrote != c.committed {
				t.Errorf("other op applied = %v, want %v", wrote, c.committed)
			}
			ttl, ok := e.TTL("k")
			if c.wantTTL == 0 {
				if ok {
					t.Errorf("k survives with TTL %v, want deleted", ttl)
				}
			} else if !ok || ttl != c.wantTTL {
				t.Errorf("TTL(k) = %v %v, want %v", ttl, ok, c.wantTTL)
			}
			if err := e.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
	e := contractEngine(t)
	_, _, err := e.Commit(nil, []engine.Op{{Key: "k", Value: nil, TTL: engine.NoTTL, Only: engine.ConditionIfAbsent, IfVersion: 1}})
	if !errors.Is(err, engine.ErrInvalidOptions) {
		t.Errorf("Op with IfAbsent and IfVersion: %v, want ErrInvalidOptions", err)
	}
}

// TestPinIsTheSameOnEveryWrite: Pin in SetOptions, Op and IncrOptions pins
// the key the write leaves, existing or new, and a later write without Pin
// leaves it pinned.
func TestPinIsTheSameOnEveryWrite(t *testing.T) {
	writes := []struct {
		name  string
		write func(e *engine.Engine, pin bool) error
	}{
		{"SetWith", func(e *engine.Engine, pin bool) error {
			_, _, err := e.SetWith("k", []byte("7"), engine.SetOptions{KeepTTL: true, Pin: pin})
			return err
		}},
		{"Commit", func(e *engine.Engine, pin bool) error {
			_, _, err := e.Commit(nil, []engine.Op{{Key: "k", Value: []byte("7"), KeepTTL: true, Pin: pin}})
			return err
		}},
		{"IncrWith", func(e *engine.Engine, pin bool) error {
			_, err := e.IncrWith("k", 1, engine.IncrOptions{TTL: engine.NoTTL, Pin: pin})
			return err
		}},
	}
	for _, w := range writes {
		for _, existing := range []bool{true, false} {
			name := w.name + " new key"
			if existing {
				name = w.name + " existing key"
			}
			t.Run(name, func(t *testing.T) {
				e := contractEngine(t)
				if !existing {
					e.Delete("k")
				}
				if err := w.write(e, true); err != nil {
					t.Fatal(err)
				}
				if it, _ := e.GetItem("k"); !it.Pinned {
					t.Fatal("a write with Pin left the key unpinned")
				}
				if err := w.write(e, false); err != nil {
					t.Fatal(err)
				}
				if it, _ := e.GetItem("k"); !it.Pinned {
					t.Fatal("a write without Pin unpinned the key")
				}
				if err := e.Check(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
