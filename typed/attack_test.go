package typed_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/cas"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/typed"
)

// TestKeyLimitWithPrefix: the engine limits the prefixed key: a key whose
// prefixed form is exactly MaxKeySize works on every call, one byte more is
// ErrKeyTooLarge on every call that returns an error (and a miss on the
// reads), and nothing is written.
func TestKeyLimitWithPrefix(t *testing.T) {
	e, _ := newEngine(t)
	const prefix = "p:"
	m := newMap(t, e, typed.Config[string]{Prefix: prefix})
	fits := strings.Repeat("k", engine.DefaultMaxKeySize-len(prefix))
	over := fits + "k"
	upd := func(k string) error {
		_, _, err := m.Update(k, func(string, bool) (string, error) { return "u", nil }, cas.Options{TTL: engine.NoTTL})
		return err
	}
	for _, tt := range []struct {
		name string
		op   func(k string) error
	}{
		{"Set", func(k string) error { _, err := m.Set(k, "v"); return err }},
		{"SetTTL", func(k string) error { _, err := m.SetTTL(k, "v", time.Hour); return err }},
		{"SetWith", func(k string) error {
			_, _, err := m.SetWith(k, "v", engine.SetOptions{TTL: engine.NoTTL})
			return err
		}},
		{"Update", upd},
		{"GetAndExpire", func(k string) error { _, _, err := m.GetAndExpire(k, time.Hour); return err }},
		{"Expire", func(k string) error { _, err := m.Expire(k, time.Hour, engine.ExpireConditionAlways); return err }},
		{"Persist", func(k string) error { _, err := m.Persist(k); return err }},
		{"CompareAndSwap", func(k string) error { _, _, err := m.CompareAndSwap(k, 1, "v"); return err }},
	} {
		if err := tt.op(fits); err != nil {
			t.Errorf("%s(key of %d bytes with prefix): got %v, want nil", tt.name, len(prefix)+len(fits), err)
		}
		if err := tt.op(over); !errors.Is(err, engine.ErrKeyTooLarge) {
			t.Errorf("%s(key of %d bytes with prefix): got %v, want ErrKeyTooLarge", tt.name, len(prefix)+len(over), err)
		}
	}
	if v, ok, err := m.Get(fits); !ok || err != nil || v != "u" {
		t.Errorf("Get(longest key) = %q, %v, %v; want \"u\", true, nil", v, ok, err)
	}
	if _, ok, err := m.Get(over); ok || err != nil {
		t.Errorf("Get(too long) = %v, %v; want a miss", ok, err)
	}
	if _, ok, err := m.GetAndDelete(over); ok || err != nil {
		t.Errorf("GetAndDelete(too long) = %v, %v; want a miss", ok, err)
	}
	if v, ok, err := m.GetAndDelete(fits); !ok || err != nil || v != "u" {
		t.Errorf("GetAndDelete(longest key) = %q, %v, %v", v, ok, err)
	}
	if n := e.Len(); n != 0 {
		t.Errorf("engine holds %d keys, want 0", n)
	}
}

// TestJSONUnsupportedValues: values encoding/json refuses (NaN, ±Inf, a
// channel, a func) are ErrEncode wrapping json's error, and nothing is
// written; the key keeps its old value and version.
func TestJSONUnsupportedValues(t *testing.T) {
	e, _ := newEngine(t)
	f := newMap(t, e, typed.Config[float64]{})
	v1, err := f.Set("f", 1.5)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := f.Set("f", x); !errors.Is(err, typed.ErrEncode) {
			t.Errorf("Set(%v) = %v, want ErrEncode", x, err)
		}
		if _, _, err := f.Update("f", func(float64, bool) (float64, error) { return x, nil }, cas.Options{TTL: engine.NoTTL}); !errors.Is(err, typed.ErrEncode) {
			t.Errorf("Update to %v = %v, want ErrEncode", x, err)
		}
	}
	if it, _, _ := f.GetItem("f"); it.Value != 1.5 || it.Version != v1 {
		t.Errorf("after refused writes: %+v, want 1.5 at version %d", it, v1)
	}
	for _, x := range []float64{math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 0, math.Copysign(0, -1)} {
		if _, err := f.Set("g", x); err != nil {
			t.Fatalf("Set(%v): %v", x, err)
		}
		got, _, err := f.Get("g")
		if err != nil || got != x {
			t.Errorf("round trip of %v: got %v, %v", x, got, err)
		}
	}
	ch := newMap(t, e, typed.Config[chan int]{})
	if _, err := ch.Set("c", make(chan int)); !errors.Is(err, typed.ErrEncode) {
		t.Errorf("Set(chan) = %v, want ErrEncode", err)
	}
	if _, ok := e.Get("c"); ok {
		t.Error("a refused Set wrote")
	}
}

// TestEmptyAndNilValues: empty strings, nil and empty slices and maps
// round-trip as what their codec promises, and a zero-length stored value
// is a hit, not a miss.
func TestEmptyAndNilValues(t *testing.T) {
	e, _ := newEngine(t)
	s := newMap(t, e, typed.Config[string]{})
	b := newMap(t, e, typed.Config[[]byte]{})
	mp := newMap(t, e, typed.Config[map[string]int]{})
	if _, err := s.Set("s", ""); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get("s"); v != "" || !ok || err != nil {
		t.Errorf("Get(empty string) = %q, %v, %v; want \"\", true, nil", v, ok, err)
	}
	for _, in := range [][]byte{nil, {}} {
		if _, err := b.Set("b", in); err != nil {
			t.Fatal(err)
		}
		v, ok, err := b.Get("b")
		if len(v) != 0 || !ok || err != nil {
			t.Errorf("Get after Set(%#v) = %#v, %v, %v; want empty, true, nil", in, v, ok, err)
		}
	}
	if _, err := mp.Set("m", nil); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := mp.Get("m"); v != nil || !ok || err != nil {
		t.Errorf("Get(nil map) = %#v, %v, %v; want nil, true, nil", v, ok, err)
	}
	// Update on a nil map that exists: old is nil, exists true.
	got, _, err := mp.Update("m", func(old map[string]int, exists bool) (map[string]int, error) {
		if !exists || old != nil {
			return nil, fmt.Errorf("got old %#v exists %v, want nil, true", old, exists)
		}
		return map[string]int{"a": 1}, nil
	}, cas.Options{TTL: engine.NoTTL})
	if err != nil || got["a"] != 1 {
		t.Errorf("Update of a nil map = %v, %v", got, err)
	}
}

// TestLargeValues: values past the pooled buffer size and up to the
// engine's entry limit round-trip, the pool then still serves small values
// correctly, and a value over the limit is ErrTooLarge with nothing
// written.
func TestLargeValues(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[[]byte]{})
	for _, n := range []int{255, 256, 257, 64 << 10, 64<<10 + 1, 1 << 20} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i*7 + n)
		}
		if _, err := m.Set("big", want); err != nil {
			t.Fatalf("Set(%d bytes): %v", n, err)
		}
		got, ok, err := m.Get("big")
		if !ok || err != nil || string(got) != string(want) {
			t.Errorf("Get of %d bytes: ok %v err %v, equal %v", n, ok, err, string(got) == string(want))
		}
		if _, err := m.Set("small", []byte("s")); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := m.Get("small"); string(got) != "s" {
			t.Errorf("after a %d-byte value, small = %q, want \"s\"", n, got)
		}
	}
	e2, err := engine.New(engine.Config{MaxBytes: 1 << 10, ExpiryInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	m2 := newMap(t, e2, typed.Config[[]byte]{})
	v1, _ := m2.Set("k", []byte("x"))
	if _, err := m2.Set("k", make([]byte, 1<<10)); !errors.Is(err, engine.ErrTooLarge) {
		t.Errorf("Set over MaxEntrySize = %v, want ErrTooLarge", err)
	}
	if it, _, _ := m2.GetItem("k"); string(it.Value) != "x" || it.Version != v1 {
		t.Errorf("after a refused Set: %+v", it)
	}
}

// panicky is a Codec whose Encode panics on a negative value and whose
// Decode panics on the byte 0xff.
type panicky struct{}

func (panicky) Encode(dst []byte, v int) ([]byte, error) {
	if v < 0 {
		panic("encode boom")
	}
	return append(dst, byte(v)), nil
}
func (panicky) Decode(src []byte) (int, error) {
	if len(src) == 1 && src[0] == 0xff {
		panic("decode boom")
	}
	return int(src[0]), nil
}

// TestCodecPanicLeavesMapUsable: a codec's panic reaches the caller (the
// Map does not hide it), holds no lock and changes nothing: afterwards
// every key has its value and the Map keeps working, even on the same
// goroutine and key.
func TestCodecPanicLeavesMapUsable(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[int]{Codec: panicky{}})
	v1, _ := m.Set("k", 7)
	e.Set("bad", []byte{0xff})
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	for range 3 {
		mustPanic("Set", func() { m.Set("k", -1) })
		mustPanic("CompareAndSwap", func() { m.CompareAndSwap("k", v1, -1) })
		mustPanic("Update", func() {
			m.Update("k", func(int, bool) (int, error) { return -1, nil }, cas.Options{TTL: engine.NoTTL})
		})
		mustPanic("Get", func() { m.Get("bad") })
		mustPanic("GetAndDelete", func() { m.GetAndDelete("bad") })
	}
	if it, ok, err := m.GetItem("k"); !ok || err != nil || it.Value != 7 || it.Version != v1 {
		t.Errorf("after panics: %+v, %v, %v; want 7 at version %d", it, ok, err, v1)
	}
	if _, ok := e.Get("bad"); !ok {
		t.Error("a panicking decode lost the stored value")
	}
	if _, err := m.Set("k", 8); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := m.Get("k"); v != 8 {
		t.Errorf("Get after panics = %d, want 8", v)
	}
}

// TestUpdateFnPanicAndReentry: fn may call back into the Map and the
// engine (no lock is held while it runs), and a panic in fn changes
// nothing.
func TestUpdateFnPanicAndReentry(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[int]{})
	m.Set("k", 1)
	func() {
		defer func() { recover() }()
		m.Update("k", func(int, bool) (int, error) { panic("fn boom") }, cas.Options{TTL: engine.NoTTL})
	}()
	if v, _, _ := m.Get("k"); v != 1 {
		t.Errorf("after fn panicked, k = %d, want 1", v)
	}
	// Re-entrant fn: reads the key, writes another, reads its own key's
	// TTL, even deletes another Map key; must not deadlock.
	got, _, err := m.Update("k", func(old int, _ bool) (int, error) {
		v, _, err := m.Get("k")
		if err != nil || v != old {
			return 0, fmt.Errorf("inner Get = %d, %v; want %d", v, err, old)
		}
		if _, err := m.Set("other", old*10); err != nil {
			return 0, err
		}
		m.TTL("k")
		_, _, _ = m.GetAndDelete("other")
		return old + 1, nil
	}, cas.Options{TTL: engine.NoTTL})
	if err != nil || got != 2 {
		t.Errorf("re-entrant Update = %d, %v; want 2, nil", got, err)
	}
	// A fn that always writes its own key never wins: bounded by Attempts.
	calls := 0
	_, _, err = m.Update("k", func(old int, _ bool) (int, error) {
		calls++
		m.Set("k", old+100)
		return old, nil
	}, cas.Options{Attempts: 5, TTL: engine.NoTTL})
	if !errors.Is(err, cas.ErrConflict) || calls != 5 {
		t.Errorf("self-conflicting Update = %v after %d calls, want ErrConflict after 5", err, calls)
	}
}

// TestConcurrentGetAndDelete: with writers and GetAndDeleters racing on
// one key, every value written is removed at most once, and every value a
// GetAndDelete returns was written.
func TestConcurrentGetAndDelete(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[int]{})
	const writers, deleters, each = 3, 3, 300
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := m.Set("k", w*each+i+1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range deleters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v, ok, err := m.GetAndDelete("k")
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					seen[v]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for v, n := range seen {
		if n != 1 || v < 1 || v > writers*each {
			t.Errorf("value %d returned by %d GetAndDeletes, want a written value, once", v, n)
		}
	}
}

// TestTTLEdges: the TTLs the Map takes follow the engine's table: SetTTL,
// GetAndExpire and Expire refuse 0, NoTTL, other negatives and a deadline
// past the clock's range; nothing changes then.
func TestTTLEdges(t *testing.T) {
	e, clk := newEngine(t)
	m := newMap(t, e, typed.Config[string]{})
	v1, _ := m.SetTTL("k", "v", time.Minute)
	bad := []time.Duration{0, engine.NoTTL, -2, math.MinInt64, math.MaxInt64}
	for _, ttl := range bad {
		if _, err := m.SetTTL("k", "w", ttl); !errors.Is(err, engine.ErrInvalidTTL) {
			t.Errorf("SetTTL(%v) = %v, want ErrInvalidTTL", ttl, err)
		}
		if _, _, err := m.GetAndExpire("k", ttl); !errors.Is(err, engine.ErrInvalidTTL) {
			t.Errorf("GetAndExpire(%v) = %v, want ErrInvalidTTL", ttl, err)
		}
		if _, err := m.Expire("k", ttl, engine.ExpireConditionAlways); !errors.Is(err, engine.ErrInvalidTTL) {
			t.Errorf("Expire(%v) = %v, want ErrInvalidTTL", ttl, err)
		}
		if ttl == engine.NoTTL {
			continue // valid for Update
		}
		if _, _, err := m.Update("k", func(string, bool) (string, error) { return "u", nil }, cas.Options{TTL: ttl, ResetTTL: true}); !errors.Is(err, engine.ErrInvalidTTL) {
			t.Errorf("Update(ResetTTL %v) = %v, want ErrInvalidTTL", ttl, err)
		}
		if _, _, err := m.Update("new", func(string, bool) (string, error) { return "u", nil }, cas.Options{TTL: ttl}); !errors.Is(err, engine.ErrInvalidTTL) {
			t.Errorf("Update(create, TTL %v) = %v, want ErrInvalidTTL", ttl, err)
		}
		if _, ok, _ := m.Get("new"); ok {
			t.Errorf("Update(create, TTL %v) created the key", ttl)
		}
	}
	if _, _, err := m.Update("k", func(string, bool) (string, error) { return "u", nil }, cas.Options{Attempts: -1, TTL: engine.NoTTL}); !errors.Is(err, engine.ErrInvalidOptions) {
		t.Errorf("Update(Attempts -1) = %v, want ErrInvalidOptions", err)
	}
	if it, _, _ := m.GetItem("k"); it.Value != "v" || it.Version != v1 || it.TTL != time.Minute {
		t.Errorf("after refused calls: %+v, want v at version %d, TTL 1m", it, v1)
	}
	if _, err := m.SetTTL("n", "v", time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Nanosecond)
	if _, ok, err := m.Get("n"); ok || err != nil {
		t.Errorf("1ns key after 1ns: %v, %v; want a miss", ok, err)
	}
}

// TestPrefixesMustNotNest pins what the package doc says of prefixes: a
// key is the prefix and the Map's key joined, so a Map whose prefix begins
// with another Map's prefix shares keys with it ("user" + ":1" is
// "user:" + "1"), and a Map without prefix sees every key; prefixes keep
// Maps apart only if none begins with another.
func TestPrefixesMustNotNest(t *testing.T) {
	e, _ := newEngine(t)
	outer := newMap(t, e, typed.Config[string]{Prefix: "user"})
	inner := newMap(t, e, typed.Config[string]{Prefix: "user:"})
	all := newMap(t, e, typed.Config[string]{})
	if _, err := inner.Set("1", "ada"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		m    *typed.Map[string]
		key  string
	}{{"nesting prefix", outer, ":1"}, {"no prefix", all, "user:1"}} {
		if v, ok, err := tt.m.Get(tt.key); v != "ada" || !ok || err != nil {
			t.Errorf("%s: Get(%q) = %q, %v, %v; want the other Map's \"ada\"", tt.name, tt.key, v, ok, err)
		}
	}
}

// TestUpdateAndGetAndDeleteConserve: incrementers (Update) and drainers
// (GetAndDelete) race on one counter; every increment ends up either in a
// value some drainer removed or in the final value, exactly once.
func TestUpdateAndGetAndDeleteConserve(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[int]{})
	const incs, drains, each = 4, 2, 250
	var wg sync.WaitGroup
	var mu sync.Mutex
	drained := 0
	for range incs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, _, err := m.Update("n", func(old int, _ bool) (int, error) { return old + 1, nil }, cas.Options{Attempts: 1 << 20, TTL: engine.NoTTL})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range drains {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v, ok, err := m.GetAndDelete("n")
				if err != nil && !errors.Is(err, cas.ErrConflict) {
					t.Error(err)
					return
				}
				if !ok && v != 0 {
					t.Errorf("a miss returned %d", v)
				}
				mu.Lock()
				drained += v
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	last, _, _ := m.Get("n")
	if got := drained + last; got != incs*each {
		t.Errorf("drained %d + left %d = %d, want %d increments", drained, last, got, incs*each)
	}
}

// stamped embeds time.Time, whose pointer's MarshalBinary and
// UnmarshalBinary it gets by promotion.
type stamped struct {
	time.Time
	Name string
}

// TestDefaultCodecPromotedMethods pins what the package doc warns of: a
// struct that embeds a type with binary methods has them, so the default
// codec is Binary and stores the embedded field alone; Name is not kept.
// A Config.Codec (JSON would not help either: time.Time's MarshalJSON is
// promoted too) is the way out.
func TestDefaultCodecPromotedMethods(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[stamped]{})
	at := time.Unix(5, 0).UTC()
	if _, err := m.Set("k", stamped{Time: at, Name: "x"}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := m.Get("k")
	if want := (stamped{Time: at}); got != want || !ok || err != nil {
		t.Errorf("Get = %+v, %v, %v; want %+v (Name dropped by time.Time's promoted MarshalBinary)", got, ok, err, want)
	}
}
