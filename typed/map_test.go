package typed_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/cas"
	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/typed"
)

type user struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin,omitempty"`
}

// point has pointer-receiver binary methods: 16 bytes, two float64s.
type point struct{ X, Y float64 }

func (p *point) MarshalBinary() ([]byte, error) { return p.AppendBinary(nil) }
func (p *point) AppendBinary(b []byte) ([]byte, error) {
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.X))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Y)), nil
}
func (p *point) UnmarshalBinary(b []byte) error {
	if len(b) != 16 {
		return errors.New("point: want 16 bytes")
	}
	p.X = math.Float64frombits(binary.LittleEndian.Uint64(b))
	p.Y = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	return nil
}

func newEngine(t testing.TB) (*engine.Engine, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Unix(1000, 0))
	e, err := engine.New(engine.Config{Clock: clk, ExpiryInterval: -1, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, clk
}

func newMap[V any](t testing.TB, e *engine.Engine, cfg typed.Config[V]) *typed.Map[V] {
	t.Helper()
	m, err := typed.New(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewRejectsNilEngine(t *testing.T) {
	_, err := typed.New[user](nil, typed.Config[user]{})
	if !errors.Is(err, typed.ErrInvalidConfig) {
		t.Fatalf("New(nil) error = %v, want ErrInvalidConfig", err)
	}
}

// TestDefaultCodecStoredBytes pins what the default codec writes, so that
// the byte API and other programs can read it.
func TestDefaultCodecStoredBytes(t *testing.T) {
	e, _ := newEngine(t)
	tests := []struct {
		name string
		set  func() error
		want string
	}{
		{"string as is", func() error { _, err := newMap(t, e, typed.Config[string]{}).Set("k", "hé\x00"); return err }, "hé\x00"},
		{"bytes as is", func() error { _, err := newMap(t, e, typed.Config[[]byte]{}).Set("k", []byte{1, 2}); return err }, "\x01\x02"},
		{"struct as JSON", func() error { _, err := newMap(t, e, typed.Config[user]{}).Set("k", user{Name: "ada"}); return err }, `{"name":"ada"}`},
		{"binary marshaler", func() error { _, err := newMap(t, e, typed.Config[point]{}).Set("k", point{1, 2}); return err }, string(must((&point{1, 2}).MarshalBinary()))},
		{"named string as JSON", func() error {
			type color string
			_, err := newMap(t, e, typed.Config[color]{}).Set("k", "red")
			return err
		}, `"red"`},
		{"explicit JSON for string", func() error {
			_, err := newMap(t, e, typed.Config[string]{Codec: typed.JSON[string]()}).Set("k", "x")
			return err
		}, `"x"`},
		{"explicit Binary", func() error {
			_, err := newMap(t, e, typed.Config[point]{Codec: typed.Binary[point]()}).Set("k", point{3, 4})
			return err
		}, string(must((&point{3, 4}).MarshalBinary()))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.set(); err != nil {
				t.Fatal(err)
			}
			got, _ := e.Get("k")
			if string(got) != tt.want {
				t.Errorf("stored %q, want %q", got, tt.want)
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	e, clk := newEngine(t)
	pts := newMap(t, e, typed.Config[point]{Prefix: "pt:"})
	v1, err := pts.SetTTL("a", point{1.5, -2}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	it, ok, err := pts.GetItem("a")
	if err != nil || !ok {
		t.Fatalf("GetItem = %v, %v", ok, err)
	}
	if want := (typed.Item[point]{Value: point{1.5, -2}, Version: v1, TTL: time.Minute}); it != want {
		t.Errorf("GetItem = %+v, want %+v", it, want)
	}
	clk.Advance(time.Minute)
	if _, ok, err := pts.Get("a"); ok || err != nil {
		t.Errorf("Get after TTL = %v, %v; want miss", ok, err)
	}
	if _, ok, err := pts.Get("missing"); ok || err != nil {
		t.Errorf("Get(missing) = %v, %v; want miss", ok, err)
	}
}

func TestPrefixIsolatesMaps(t *testing.T) {
	e, _ := newEngine(t)
	users := newMap(t, e, typed.Config[user]{Prefix: "user:"})
	pts := newMap(t, e, typed.Config[point]{Prefix: "pt:"})
	users.Set("1", user{Name: "ada"})
	pts.Set("1", point{1, 1})
	u, _, err := users.Get("1")
	if err != nil || u.Name != "ada" {
		t.Errorf("users.Get = %+v, %v", u, err)
	}
	if _, ok := e.Get("user:1"); !ok {
		t.Error("engine has no user:1: prefix not applied")
	}
	if users.Delete("2") || !pts.Delete("1") {
		t.Error("Delete crossed prefixes")
	}
	if _, ok, _ := users.Get("1"); !ok {
		t.Error("deleting pt:1 removed user:1")
	}
}

// TestDecodeErrorKeepsValue: a stored value the codec rejects is an
// errors.Is-able error on every read path, and nothing deletes it.
func TestDecodeErrorKeepsValue(t *testing.T) {
	e, _ := newEngine(t)
	pts := newMap(t, e, typed.Config[point]{})
	users := newMap(t, e, typed.Config[user]{})
	e.Set("bad", []byte("not 16 bytes"))
	e.Set("badjson", []byte("{"))

	check := func(name string, ok bool, err error) {
		t.Helper()
		if !errors.Is(err, typed.ErrDecode) || !ok {
			t.Errorf("%s: ok = %v, err = %v; want ok and ErrDecode", name, ok, err)
		}
		if err != nil && !strings.Contains(err.Error(), "want 16 bytes") && !strings.Contains(err.Error(), "JSON") {
			t.Errorf("%s: error %q lost the codec's cause", name, err)
		}
	}
	_, ok, err := pts.Get("bad")
	check("Get", ok, err)
	_, ok, err = pts.GetItem("bad")
	check("GetItem", ok, err)
	_, ok, err = pts.GetAndDelete("bad")
	check("GetAndDelete", ok, err)
	_, _, err = pts.Update("bad", func(old point, _ bool) (point, error) { return old, nil }, cas.Options{TTL: engine.NoTTL})
	check("Update", true, err)
	_, ok, err = users.Get("badjson")
	check("Get JSON", ok, err)

	for _, k := range []string{"bad", "badjson"} {
		if _, ok := e.Get(k); !ok {
			t.Errorf("%s was removed by a failed decode", k)
		}
	}
}

type failing struct{}

func (failing) Encode(dst []byte, v int) ([]byte, error) {
	if v < 0 {
		return dst, errors.New("negative")
	}
	return append(dst, byte(v)), nil
}
func (failing) Decode(src []byte) (int, error) { return int(src[0]), nil }

func TestEncodeErrorWritesNothing(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[int]{Codec: failing{}})
	v1, _ := m.Set("k", 7)
	tests := []struct {
		name string
		op   func() error
	}{
		{"Set", func() error { _, err := m.Set("k", -1); return err }},
		{"SetTTL", func() error { _, err := m.SetTTL("k", -1, time.Second); return err }},
		{"SetWith", func() error { _, _, err := m.SetWith("k", -1, engine.SetOptions{TTL: engine.NoTTL}); return err }},
		{"CompareAndSwap", func() error { _, _, err := m.CompareAndSwap("k", v1, -1); return err }},
		{"Update", func() error {
			_, _, err := m.Update("k", func(int, bool) (int, error) { return -1, nil }, cas.Options{TTL: engine.NoTTL})
			return err
		}},
	}
	for _, tt := range tests {
		if err := tt.op(); !errors.Is(err, typed.ErrEncode) {
			t.Errorf("%s error = %v, want ErrEncode", tt.name, err)
		}
		it, _, _ := m.GetItem("k")
		if it.Value != 7 || it.Version != v1 {
			t.Errorf("after failed %s: %+v, want value 7 version %d", tt.name, it, v1)
		}
	}
}

func TestEngineErrorsPassThrough(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[string]{})
	if _, err := m.SetTTL("k", "v", 0); !errors.Is(err, engine.ErrInvalidTTL) {
		t.Errorf("SetTTL(0) = %v, want ErrInvalidTTL", err)
	}
	if _, err := m.Set(strings.Repeat("k", engine.DefaultMaxKeySize+1), "v"); !errors.Is(err, engine.ErrKeyTooLarge) {
		t.Errorf("Set(huge key) = %v, want ErrKeyTooLarge", err)
	}
	e.Close()
	if _, err := m.Set("k", "v"); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Set after Close = %v, want ErrClosed", err)
	}
	if _, ok, err := m.GetAndDelete("k"); ok || err != nil {
		t.Errorf("GetAndDelete after Close = %v, %v; want a miss", ok, err)
	}
}

func TestCompareAndSwap(t *testing.T) {
	e, clk := newEngine(t)
	m := newMap(t, e, typed.Config[user]{})
	v1, _ := m.SetTTL("u", user{Name: "ada"}, time.Hour)
	v2, ok, err := m.CompareAndSwap("u", v1, user{Name: "ada", Admin: true})
	if !ok || err != nil || v2 <= v1 {
		t.Fatalf("CAS(current) = %d, %v, %v; want a new version > %d", v2, ok, err, v1)
	}
	if _, ok, _ := m.CompareAndSwap("u", v1, user{Name: "eve"}); ok {
		t.Error("CAS with a stale version swapped")
	}
	if _, ok, _ := m.CompareAndSwap("nobody", 0, user{}); ok {
		t.Error("CAS on a missing key swapped")
	}
	clk.Advance(time.Minute)
	it, _, _ := m.GetItem("u")
	if want := (typed.Item[user]{Value: user{Name: "ada", Admin: true}, Version: v2, TTL: 59 * time.Minute}); it != want {
		t.Errorf("after CAS: %+v, want %+v (TTL kept)", it, want)
	}
	if m.CompareAndDelete("u", v1) {
		t.Error("CompareAndDelete with a stale version deleted")
	}
	if !m.CompareAndDelete("u", v2) {
		t.Error("CompareAndDelete with the current version did not delete")
	}
}

func TestUpdate(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[map[string]int]{})
	inc := func(old map[string]int, exists bool) (map[string]int, error) {
		if !exists {
			old = map[string]int{}
		}
		old["n"]++
		return old, nil
	}
	const workers, each = 4, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, _, err := m.Update("c", inc, cas.Options{Attempts: 1 << 20, TTL: engine.NoTTL}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, _, _ := m.Get("c")
	if got["n"] != workers*each {
		t.Errorf("n = %d after %d concurrent updates", got["n"], workers*each)
	}
	if _, _, err := m.Update("c", func(map[string]int, bool) (map[string]int, error) { return nil, cas.ErrAbort }, cas.Options{TTL: engine.NoTTL}); !errors.Is(err, cas.ErrAbort) {
		t.Errorf("aborted Update = %v, want ErrAbort", err)
	}
	// A TTL of 0 (the zero Options) is never "forever": refused before fn.
	if _, _, err := m.Update("zero", func(map[string]int, bool) (map[string]int, error) {
		t.Error("fn ran with an invalid TTL")
		return nil, nil
	}, cas.Options{}); !errors.Is(err, engine.ErrInvalidTTL) {
		t.Errorf("Update with the zero Options = %v, want ErrInvalidTTL", err)
	}
	if _, ok, _ := m.Get("zero"); ok {
		t.Error("Update with the zero Options created the key")
	}
	v, ver, err := m.Update("new", inc, cas.Options{TTL: time.Minute})
	it, _, _ := m.GetItem("new")
	if err != nil || v["n"] != 1 || it.Version != ver || it.TTL != time.Minute {
		t.Errorf("Update(new) = %v, %d, %v; stored %+v", v, ver, err, it)
	}
}

func TestGetAndDelete(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[user]{})
	m.Set("u", user{Name: "ada"})
	u, ok, err := m.GetAndDelete("u")
	if u.Name != "ada" || !ok || err != nil {
		t.Errorf("GetAndDelete = %+v, %v, %v", u, ok, err)
	}
	if _, ok, _ := m.Get("u"); ok {
		t.Error("key still present after GetAndDelete")
	}
	if _, ok, err := m.GetAndDelete("u"); ok || err != nil {
		t.Errorf("second GetAndDelete = %v, %v; want a miss", ok, err)
	}
}

// TestGetDoesNotAliasPool: values decoded from pooled buffers must not
// change when the buffer is reused (a []byte codec that kept src would).
func TestGetDoesNotAliasPool(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[[]byte]{})
	m.Set("a", []byte("aaaa"))
	m.Set("b", []byte("bbbb"))
	a, _, _ := m.Get("a")
	for range 100 {
		m.Get("b")
	}
	if string(a) != "aaaa" {
		t.Errorf("value read earlier changed to %q", a)
	}
}

// passthrough is a Codec that returns the caller's slice instead of
// appending to dst: legal, and the Map must not reuse that memory.
type passthrough struct{}

func (passthrough) Encode(dst []byte, v []byte) ([]byte, error) { return v, nil }
func (passthrough) Decode(src []byte) ([]byte, error)           { return append([]byte(nil), src...), nil }

// TestEncodeResultNotPooled: a slice a Codec returns that is not the
// buffer it was given belongs to someone else; pooling it would let the
// next read overwrite the caller's value.
func TestEncodeResultNotPooled(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[[]byte]{Codec: passthrough{}})
	m.Set("b", []byte("XXXXX"))
	mine := []byte("hello")
	for range 50 {
		m.Set("a", mine)
		m.Get("b")
		m.Set("b", []byte("XXXXX"))
	}
	if string(mine) != "hello" {
		t.Errorf("caller's slice changed to %q", mine)
	}
}

// TestConcurrentGetSet: readers and writers share the buffer pool; every
// read must decode to a value some writer wrote, whole.
func TestConcurrentGetSet(t *testing.T) {
	e, _ := newEngine(t)
	m := newMap(t, e, typed.Config[point]{})
	const workers, rounds = 4, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				f := float64(w*rounds + i)
				if _, err := m.Set("p", point{f, -f}); err != nil {
					t.Error(err)
					return
				}
				got, ok, err := m.Get("p")
				if err != nil || !ok || got.X != -got.Y {
					t.Errorf("Get = %+v, %v, %v: torn or foreign value", got, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestTTLOperations(t *testing.T) {
	e, clk := newEngine(t)
	m := newMap(t, e, typed.Config[user]{Prefix: "u:"})
	v1, _ := m.SetTTL("s", user{Name: "ada"}, time.Minute)
	if ttl, ok := m.TTL("s"); ttl != time.Minute || !ok {
		t.Errorf("TTL = %v, %v; want 1m, true", ttl, ok)
	}
	clk.Advance(50 * time.Second)
	it, ok, err := m.GetAndExpire("s", time.Minute) // slide
	if want := (typed.Item[user]{Value: user{Name: "ada"}, Version: v1, TTL: time.Minute}); it != want || !ok || err != nil {
		t.Errorf("GetAndExpire = %+v, %v, %v; want %+v", it, ok, err, want)
	}
	clk.Advance(50 * time.Second)
	if _, ok, _ := m.Get("s"); !ok {
		t.Error("slid key expired at its old deadline")
	}
	if done, err := m.Expire("s", time.Hour, engine.ExpireConditionGT); !done || err != nil {
		t.Errorf("Expire(GT) = %v, %v", done, err)
	}
	if ttl, _ := m.TTL("s"); ttl != time.Hour {
		t.Errorf("TTL after Expire = %v", ttl)
	}
	if ok, err := m.Persist("s"); !ok || err != nil {
		t.Error("Persist of a key with a TTL = false")
	}
	if ttl, ok := m.TTL("s"); ttl != engine.NoTTL || !ok {
		t.Errorf("TTL after Persist = %v, %v; want NoTTL", ttl, ok)
	}
	if _, ok := m.TTL("missing"); ok {
		t.Error("TTL of a missing key ok")
	}
	if _, _, err := m.GetAndExpire("s", 0); !errors.Is(err, engine.ErrInvalidTTL) {
		t.Errorf("GetAndExpire(0) = %v, want ErrInvalidTTL", err)
	}
	e.Set("u:bad", []byte("{"))
	if _, ok, err := m.GetAndExpire("bad", time.Minute); !ok || !errors.Is(err, typed.ErrDecode) {
		t.Errorf("GetAndExpire of a corrupt value = %v, %v; want ok and ErrDecode", ok, err)
	}
}
