package engine

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/expiry"
)

var t0 = time.Unix(1_700_000_000, 0)

func newTest(t testing.TB, cfg Config) (*Engine, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(t0)
	if cfg.Clock == nil {
		cfg.Clock = clk
	}
	if cfg.ExpiryInterval == 0 {
		cfg.ExpiryInterval = -1
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Check(); err != nil {
			t.Errorf("Check after test: %v", err)
		}
		e.Close()
	})
	return e, clk
}

func mustCheck(t testing.TB, e *Engine) {
	t.Helper()
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

func getS(e *Engine, k string) (string, bool) {
	v, ok := e.Get(k)
	return string(v), ok
}

func TestVisibilityBoundary(t *testing.T) {
	e, clk := newTest(t, Config{})
	if _, err := e.SetTTL("k", []byte("v"), time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second - 1)
	if v, ok := getS(e, "k"); !ok || v != "v" {
		t.Fatalf("at t+d-1ns: got %q,%v want v,true", v, ok)
	}
	if ttl, ok := e.TTL("k"); !ok || ttl != 1 {
		t.Fatalf("TTL at t+d-1ns: got %v,%v want 1ns,true", ttl, ok)
	}
	clk.Advance(1)
	if v, ok := getS(e, "k"); ok {
		t.Fatalf("at t+d: got %q, want miss", v)
	}
	if _, ok := e.TTL("k"); ok {
		t.Fatal("TTL at t+d: key still exists")
	}
	if got := e.Stats().Expired; got != 1 {
		t.Fatalf("Expired = %d, want 1", got)
	}
}

func TestTTLKinds(t *testing.T) {
	tests := []struct {
		name    string
		run     func(e *Engine) error
		wantTTL time.Duration
		wantOK  bool
	}{
		{"plain set clears TTL", func(e *Engine) error {
			e.SetTTL("k", []byte("a"), time.Minute)
			_, err := e.Set("k", []byte("b"))
			return err
		}, NoTTL, true},
		{"keep-TTL keeps it", func(e *Engine) error {
			e.SetTTL("k", []byte("a"), time.Minute)
			_, _, err := e.SetWith("k", []byte("b"), SetOptions{KeepTTL: true})
			return err
		}, time.Minute, true},
		{"incr keeps TTL", func(e *Engine) error {
			e.SetTTL("k", []byte("1"), time.Minute)
			_, err := e.Incr("k")
			return err
		}, time.Minute, true},
		{"TTL on create applies on create", func(e *Engine) error {
			_, _, err := e.SetWith("k", []byte("a"), SetOptions{TTL: time.Minute, TTLOnCreate: true})
			return err
		}, time.Minute, true},
		{"TTL on create keeps existing no-TTL", func(e *Engine) error {
			e.Set("k", []byte("a"))
			_, _, err := e.SetWith("k", []byte("b"), SetOptions{TTL: time.Minute, TTLOnCreate: true})
			return err
		}, NoTTL, true},
		{"incr TTL only on create", func(e *Engine) error {
			e.IncrWith("k", 1, IncrOptions{TTL: time.Minute})
			_, err := e.IncrWith("k", 1, IncrOptions{TTL: time.Hour})
			return err
		}, time.Minute, true},
		{"expire GT on key without TTL does nothing", func(e *Engine) error {
			e.Set("k", []byte("a"))
			ok, err := e.Expire("k", time.Minute, ExpireConditionGT)
			if ok {
				return errors.New("GT applied")
			}
			return err
		}, NoTTL, true},
		{"expire LT on key without TTL sets it", func(e *Engine) error {
			e.Set("k", []byte("a"))
			ok, err := e.Expire("k", time.Minute, ExpireConditionLT)
			if !ok {
				return errors.New("LT did not apply")
			}
			return err
		}, time.Minute, true},
		{"expire NX keeps existing TTL", func(e *Engine) error {
			e.SetTTL("k", []byte("a"), time.Hour)
			ok, err := e.Expire("k", time.Minute, ExpireConditionNX)
			if ok {
				return errors.New("NX applied")
			}
			return err
		}, time.Hour, true},
		{"expire XX on no TTL does nothing", func(e *Engine) error {
			e.Set("k", []byte("a"))
			ok, err := e.Expire("k", time.Minute, ExpireConditionXX)
			if ok {
				return errors.New("XX applied")
			}
			return err
		}, NoTTL, true},
		{"expire GT extends", func(e *Engine) error {
			e.SetTTL("k", []byte("a"), time.Minute)
			_, err := e.Expire("k", time.Hour, ExpireConditionGT)
			return err
		}, time.Hour, true},
		{"expire 0 is refused and keeps the TTL", func(e *Engine) error {
			e.SetTTL("k", []byte("a"), time.Minute)
			ok, err := e.Expire("k", 0, ExpireConditionAlways)
			if ok || !errors.Is(err, ErrInvalidTTL) {
				return fmt.Errorf("Expire(0) = %v, %v; want ErrInvalidTTL", ok, err)
			}
			return nil
		}, time.Minute, true},
		{"expireAt in the past deletes", func(e *Engine) error {
			e.Set("k", []byte("a"))
			_, err := e.ExpireAt("k", t0.Add(-time.Hour), ExpireConditionAlways)
			return err
		}, 0, false},
		{"persist removes TTL", func(e *Engine) error {
			e.SetTTL("k", []byte("a"), time.Minute)
			if ok, err := e.Persist("k"); !ok || err != nil {
				return errors.New("persist reported no TTL")
			}
			return nil
		}, NoTTL, true},
		{"get-and-expire slides", func(e *Engine) error {
			e.SetTTL("k", []byte("a"), time.Minute)
			_, ok, err := e.GetAndExpire("k", time.Hour)
			if !ok {
				return errors.New("miss")
			}
			return err
		}, time.Hour, true},
		{"CAS keeps remaining TTL", func(e *Engine) error {
			v, _ := e.SetTTL("k", []byte("a"), time.Minute)
			_, ok, err := e.CompareAndSwap("k", v, []byte("b"))
			if !ok {
				return errors.New("CAS failed")
			}
			return err
		}, time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTest(t, Config{})
			if err := tt.run(e); err != nil {
				t.Fatal(err)
			}
			ttl, ok := e.TTL("k")
			if ok != tt.wantOK || (ok && ttl != tt.wantTTL) {
				t.Fatalf("TTL: got %v,%v want %v,%v", ttl, ok, tt.wantTTL, tt.wantOK)
			}
			mustCheck(t, e)
		})
	}
}

func TestIncr(t *testing.T) {
	tests := []struct {
		name    string
		initial *string
		delta   int64
		want    int64
		wantErr error
		wantVal string
	}{
		{"missing starts at 0", nil, 5, 5, nil, "5"},
		{"negative", ptr("-3"), 2, -1, nil, "-1"},
		{"zero", ptr("0"), -1, -1, nil, "-1"},
		{"max", ptr("9223372036854775806"), 1, math.MaxInt64, nil, "9223372036854775807"},
		{"min", ptr("-9223372036854775807"), -1, math.MinInt64, nil, "-9223372036854775808"},
		{"past max", ptr("9223372036854775807"), 1, 0, ErrOverflow, "9223372036854775807"},
		{"past min", ptr("-9223372036854775808"), -1, 0, ErrOverflow, "-9223372036854775808"},
		{"abc", ptr("abc"), 1, 0, ErrNotInteger, "abc"},
		{"leading space", ptr(" 1"), 1, 0, ErrNotInteger, " 1"},
		{"plus sign", ptr("+1"), 1, 0, ErrNotInteger, "+1"},
		{"leading zero", ptr("01"), 1, 0, ErrNotInteger, "01"},
		{"minus zero", ptr("-0"), 1, 0, ErrNotInteger, "-0"},
		{"empty", ptr(""), 1, 0, ErrNotInteger, ""},
		{"lone minus", ptr("-"), 1, 0, ErrNotInteger, "-"},
		{"trailing space", ptr("1 "), 1, 0, ErrNotInteger, "1 "},
		{"too long", ptr("99999999999999999999"), 1, 0, ErrNotInteger, "99999999999999999999"},
		{"below min", ptr("-9223372036854775809"), 1, 0, ErrNotInteger, "-9223372036854775809"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTest(t, Config{})
			var v0 uint64
			if tt.initial != nil {
				v0, _ = e.Set("k", []byte(*tt.initial))
			}
			got, err := e.IncrBy("k", tt.delta)
			if !errors.Is(err, tt.wantErr) || (err == nil && got != tt.want) {
				t.Fatalf("IncrBy: got %d,%v want %d,%v", got, err, tt.want, tt.wantErr)
			}
			it, _ := e.GetItem("k")
			if string(it.Value) != tt.wantVal {
				t.Fatalf("value: got %q want %q", it.Value, tt.wantVal)
			}
			if tt.wantErr != nil && it.Version != v0 {
				t.Fatalf("failed incr changed version %d -> %d", v0, it.Version)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestDecrByMinInt(t *testing.T) {
	e, _ := newTest(t, Config{})
	if _, err := e.DecrBy("k", math.MinInt64); !errors.Is(err, ErrOverflow) {
		t.Fatalf("DecrBy(MinInt64): got %v want ErrOverflow", err)
	}
	if n, err := e.DecrBy("k", 3); n != -3 || err != nil {
		t.Fatalf("DecrBy: got %d,%v want -3,nil", n, err)
	}
	if n, err := e.Decr("k"); n != -4 || err != nil {
		t.Fatalf("Decr: got %d,%v want -4,nil", n, err)
	}
}

func TestInvalidTTL(t *testing.T) {
	e, _ := newTest(t, Config{})
	e.Set("k", []byte("keep"))
	cases := []struct {
		name string
		err  error
	}{
		{"SetTTL 0", func() error { _, err := e.SetTTL("k", []byte("x"), 0); return err }()},
		{"SetTTL -1", func() error { _, err := e.SetTTL("k", []byte("x"), -1); return err }()},
		{"SetWith -1", func() error { _, _, err := e.SetWith("k", []byte("x"), SetOptions{TTL: -time.Second}); return err }()},
		{"SetTTL overflow", func() error { _, err := e.SetTTL("k", []byte("x"), math.MaxInt64); return err }()},
		{"GetAndExpire 0", func() error { _, _, err := e.GetAndExpire("k", 0); return err }()},
		{"IncrWith -2", func() error { _, err := e.IncrWith("n", 1, IncrOptions{TTL: -2}); return err }()},
		{"IncrWith 0", func() error { _, err := e.IncrWith("n", 1, IncrOptions{}); return err }()},
		{"SetWith 0", func() error { _, _, err := e.SetWith("k", []byte("x"), SetOptions{}); return err }()},
		{"Expire 0", func() error { _, err := e.Expire("k", 0, ExpireConditionAlways); return err }()},
		{"Expire overflow", func() error { _, err := e.Expire("k", math.MaxInt64, ExpireConditionAlways); return err }()},
		{"ExpireAt past 2262", func() error {
			_, err := e.ExpireAt("k", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), ExpireConditionAlways)
			return err
		}()},
	}
	for _, c := range cases {
		if !errors.Is(c.err, ErrInvalidTTL) {
			t.Errorf("%s: got %v want ErrInvalidTTL", c.name, c.err)
		}
	}
	if v, ok := getS(e, "k"); v != "keep" || !ok {
		t.Fatalf("value after invalid writes: got %q,%v want keep,true", v, ok)
	}
	if ttl, _ := e.TTL("k"); ttl != NoTTL {
		t.Fatalf("TTL after invalid writes: got %v want NoTTL", ttl)
	}
}

func TestVersionsNeverReused(t *testing.T) {
	e, clk := newTest(t, Config{})
	seen := map[uint64]bool{}
	record := func(v uint64) {
		t.Helper()
		if v == 0 || seen[v] {
			t.Fatalf("version %d reused or zero", v)
		}
		seen[v] = true
	}
	v1, _ := e.Set("k", []byte("a"))
	record(v1)
	e.Delete("k")
	v2, _ := e.Set("k", []byte("a"))
	record(v2)
	if v2 <= v1 {
		t.Fatalf("version went from %d to %d", v1, v2)
	}
	v3, _ := e.SetTTL("k", []byte("a"), time.Second)
	record(v3)
	clk.Advance(time.Second)
	e.RunExpiryCycle()
	v4, _ := e.Set("k", []byte("a"))
	record(v4)
	if _, ok, _ := e.CompareAndSwap("k", v1, []byte("stale")); ok {
		t.Fatal("CAS with a version from an earlier incarnation succeeded")
	}
	if e.CompareAndDelete("k", v3) {
		t.Fatal("CompareAndDelete with an expired incarnation's version succeeded")
	}
	// TTL changes keep the version.
	e.Expire("k", time.Hour, ExpireConditionAlways)
	if it, _ := e.GetItem("k"); it.Version != v4 {
		t.Fatalf("Expire changed version %d -> %d", v4, it.Version)
	}
}

func TestCAS(t *testing.T) {
	e, _ := newTest(t, Config{})
	v1, _ := e.Set("k", []byte("a"))
	v2, ok, err := e.CompareAndSwap("k", v1, []byte("b"))
	if !ok || err != nil || v2 <= v1 {
		t.Fatalf("CAS fresh: got %d,%v,%v want >%d,true,nil", v2, ok, err, v1)
	}
	if _, ok, _ := e.CompareAndSwap("k", v1, []byte("c")); ok {
		t.Fatal("CAS with stale version succeeded")
	}
	if v, _ := getS(e, "k"); v != "b" {
		t.Fatalf("after stale CAS: got %q want b", v)
	}
	if _, ok, _ := e.CompareAndSwap("missing", 1, []byte("c")); ok {
		t.Fatal("CAS on a missing key succeeded")
	}
	if _, ok, _ := e.CompareAndSwap("k", 0, []byte("c")); ok {
		t.Fatal("CAS with version 0 succeeded")
	}
	if e.CompareAndDelete("k", v1) {
		t.Fatal("CompareAndDelete with stale version succeeded")
	}
	if !e.CompareAndDelete("k", v2) {
		t.Fatal("CompareAndDelete with current version failed")
	}
	if _, ok := e.Get("k"); ok {
		t.Fatal("key survived CompareAndDelete")
	}
}

func TestConditionalSets(t *testing.T) {
	e, clk := newTest(t, Config{})
	if _, ok, _ := e.SetWith("k", []byte("a"), SetOptions{Only: ConditionIfPresent, TTL: NoTTL}); ok {
		t.Fatal("IfPresent on a missing key wrote")
	}
	if _, ok, _ := e.SetWith("k", []byte("a"), SetOptions{Only: ConditionIfAbsent, TTL: time.Second}); !ok {
		t.Fatal("IfAbsent on a missing key did not write")
	}
	if _, ok, _ := e.SetWith("k", []byte("b"), SetOptions{Only: ConditionIfAbsent, TTL: NoTTL}); ok {
		t.Fatal("IfAbsent on a live key wrote")
	}
	clk.Advance(time.Second)
	if _, ok, _ := e.SetWith("k", []byte("c"), SetOptions{Only: ConditionIfAbsent, TTL: NoTTL}); !ok {
		t.Fatal("IfAbsent on a due key did not write")
	}
	if _, ok, _ := e.SetWith("k", []byte("d"), SetOptions{Only: ConditionIfPresent, TTL: NoTTL}); !ok {
		t.Fatal("IfPresent on a live key did not write")
	}
	if v, _ := getS(e, "k"); v != "d" {
		t.Fatalf("got %q want d", v)
	}
	for _, o := range []SetOptions{{KeepTTL: true, TTL: 1}, {Only: 7, TTL: NoTTL}, {Only: ConditionIfAbsent, IfVersion: 3, TTL: NoTTL}} {
		if _, _, err := e.SetWith("k", []byte("x"), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("SetWith(%+v): got %v want ErrInvalidOptions", o, err)
		}
	}
}

func TestGetAndDelete(t *testing.T) {
	var removed []Removal
	e, _ := newTest(t, Config{OnRemove: func(r Removal) { removed = append(removed, r) }})
	e.Set("k", []byte("v"))
	v, ok := e.GetAndDelete("k")
	if string(v) != "v" || !ok {
		t.Fatalf("GetAndDelete: got %q,%v want v,true", v, ok)
	}
	if _, ok := e.GetAndDelete("k"); ok {
		t.Fatal("second GetAndDelete found the key")
	}
	if len(removed) != 1 || removed[0].Cause != CauseDeleted || removed[0].Key != "k" {
		t.Fatalf("removals: got %+v want one Deleted k", removed)
	}
}

func TestRemovalCauses(t *testing.T) {
	var got []string
	e, clk := newTest(t, Config{OnRemove: func(r Removal) { got = append(got, r.Key+":"+r.Cause.String()+":"+string(r.Value)) }})
	e.Set("a", []byte("1"))
	e.Set("a", []byte("2")) // replaced 1
	e.Delete("a")           // deleted 2
	e.SetTTL("b", []byte("x"), time.Second)
	e.SetTTL("c", []byte("y"), time.Second)
	clk.Advance(time.Second)
	e.Get("b")         // lazy: expired
	e.RunExpiryCycle() // active: expired c
	want := []string{"a:replaced:1", "a:deleted:2", "b:expired:x", "c:expired:y"}
	if len(got) != len(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	st := e.Stats()
	if st.Expired != 2 || st.Deleted != 1 || st.Replaced != 1 || st.Evicted != 0 {
		t.Fatalf("stats: got %+v", st)
	}
}

func TestValuesAreCopied(t *testing.T) {
	e, _ := newTest(t, Config{})
	buf := []byte("hello")
	e.Set("k", buf)
	buf[0] = 'J'
	v, _ := e.Get("k")
	if string(v) != "hello" {
		t.Fatalf("write buffer aliased: got %q", v)
	}
	v[0] = 'Y'
	if v2, _ := getS(e, "k"); v2 != "hello" {
		t.Fatalf("read buffer aliased: got %q", v2)
	}
}

func TestEmptyKeyAndValue(t *testing.T) {
	e, _ := newTest(t, Config{})
	if _, err := e.Set("", nil); err != nil {
		t.Fatal(err)
	}
	v, ok := e.Get("")
	if !ok || len(v) != 0 {
		t.Fatalf("got %q,%v want empty,true", v, ok)
	}
	if _, err := e.Set(string(make([]byte, DefaultMaxKeySize+1)), nil); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("oversized key: got %v want ErrKeyTooLarge", err)
	}
	if _, err := e.Set(string(make([]byte, DefaultMaxKeySize)), nil); err != nil {
		t.Fatalf("key at the limit: %v", err)
	}
}

func TestAppendGetNoAlloc(t *testing.T) {
	e, _ := newTest(t, Config{})
	e.Set("k", []byte("0123456789"))
	e.SetTTL("t", []byte("0123456789"), time.Hour)
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		buf, _ = e.AppendGet(buf[:0], "k")
		buf, _ = e.AppendGet(buf[:0], "t")
		buf, _ = e.AppendGet(buf[:0], "missing")
	})
	if allocs != 0 {
		t.Fatalf("AppendGet allocs = %v, want 0", allocs)
	}
}

func TestItemsSkipsDue(t *testing.T) {
	e, clk := newTest(t, Config{Shards: 4})
	for i := range 1000 {
		k := string(rune('a'+i%26)) + string(rune(i))
		if i%2 == 0 {
			e.SetTTL(k, []byte("x"), time.Second)
		} else {
			e.Set(k, []byte("y"))
		}
	}
	clk.Advance(time.Second)
	if st := e.Stats(); st.Due != 500 || st.Entries != 1000 {
		t.Fatalf("stats before reclaim: Due %d Entries %d, want 500 1000", st.Due, st.Entries)
	}
	n := 0
	for _, v := range e.All() {
		if string(v) != "y" {
			t.Fatalf("All yielded a due entry %q", v)
		}
		n++
	}
	if n != 500 {
		t.Fatalf("All yielded %d entries, want 500", n)
	}
	if st := e.Stats(); st.Due != 0 || st.Entries != 500 || st.Expired != 500 {
		t.Fatalf("stats after All: Due %d Entries %d Expired %d, want 0 500 500", st.Due, st.Entries, st.Expired)
	}
}

func TestActiveExpiryOrderAndBudget(t *testing.T) {
	var order []string
	e, clk := newTest(t, Config{Shards: 1, ExpiryBudget: expiryBudget(3)})
	e2 := e
	_ = e2
	e.onRemove = func(r Removal) { order = append(order, r.Key) }
	e.SetTTL("c", nil, 3*time.Second)
	e.SetTTL("a", nil, 1*time.Second)
	e.SetTTL("b", nil, 2*time.Second)
	e.SetTTL("z", nil, 2*time.Hour)
	e.SetTTL("d", nil, 4*time.Second)
	clk.Advance(5 * time.Second)
	n, more := e.RunExpiryCycle()
	if n != 3 || !more {
		t.Fatalf("first cycle: got %d,%v want 3,true", n, more)
	}
	n, more = e.RunExpiryCycle()
	if n != 1 || more {
		t.Fatalf("second cycle: got %d,%v want 1,false", n, more)
	}
	want := "abcd"
	got := ""
	for _, k := range order {
		got += k
	}
	if got != want {
		t.Fatalf("expiry order: got %q want %q", got, want)
	}
}

func TestClockBackwardsDoesNotResurrect(t *testing.T) {
	e, clk := newTest(t, Config{})
	e.SetTTL("k", []byte("v"), time.Second)
	clk.Advance(2 * time.Second)
	if _, ok := e.Get("k"); ok {
		t.Fatal("visible after deadline")
	}
	clk.Advance(-time.Hour)
	if _, ok := e.Get("k"); ok {
		t.Fatal("resurrected after the clock went back")
	}
}

func TestCloseIdempotent(t *testing.T) {
	e, err := New(Config{ExpiryInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Set("k", []byte("v"))
	if e.Closed() {
		t.Fatal("Closed before Close")
	}
	e.Close()
	e.Close()
	if !e.Closed() {
		t.Fatal("not Closed after Close")
	}
	if _, err := e.Set("k", []byte("v")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Set after Close: got %v want ErrClosed", err)
	}
	if _, err := e.Incr("n"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Incr after Close: got %v want ErrClosed", err)
	}
	if _, ok := e.Get("k"); ok {
		t.Fatal("Get after Close found the key")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{Shards: -1}, {Shards: 1 << 17}, {MaxKeySize: -1}, {MaxBytes: -5}, {MaxKeySize: 1 << 30}} {
		if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v): got %v want ErrInvalidConfig", c, err)
		}
	}
}

func TestShardDefaults(t *testing.T) {
	tests := []struct {
		cfg  Config
		want int
	}{
		{Config{Shards: 3}, 4},
		{Config{Shards: 1}, 1},
		{Config{MaxBytes: 4 << 10}, 1},
		{Config{MaxBytes: 8 << 20}, 8},
	}
	for _, tt := range tests {
		_, n, err := tt.cfg.resolve()
		if err != nil || n != tt.want {
			t.Errorf("resolve(%+v): got %d,%v want %d", tt.cfg, n, err, tt.want)
		}
	}
}

func expiryBudget(n int) (b expiry.Budget) { b.Count = n; return b }

// untilStopped calls f(0), f(1), … until stop is closed: the loop of a
// background writer in a concurrency test or benchmark.
func untilStopped(stop <-chan struct{}, f func(i int)) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		f(i)
	}
}
