package engine_test

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
)

// badStart is the manual clock's reading in the bad-input tests.
var badStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const badMaxKey = 32

// badFixture is an engine with data of every kind; bad inputs must leave it
// exactly as it was.
func badFixture(t *testing.T) (*engine.Engine, *clock.Manual, *[]engine.Removal) {
	t.Helper()
	clk := clock.NewManual(badStart)
	var evs []engine.Removal
	e, err := engine.New(engine.Config{
		Shards:         1,
		Clock:          clk,
		ExpiryInterval: -1,
		MaxKeySize:     badMaxKey,
		MaxBytes:       4096,
		Policy:         evict.AllKeysLRU,
		OnRemove:       func(r engine.Removal) { evs = append(evs, r) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	must := func(_ uint64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.Set("plain", []byte("value")))
	must(e.SetTTL("ttl", []byte("expiring"), time.Minute))
	must(e.Set("n", []byte("41")))
	must(e.Set("big", []byte("9223372036854775807")))
	must(e.Set("small", []byte("-9223372036854775808")))
	must(e.Set("text", []byte("abc")))
	must(e.Set("", []byte("empty key")))
	must(e.Set(strings.Repeat("k", badMaxKey), []byte("longest key")))
	v, _, err := e.SetWith("pinned", []byte("p"), engine.SetOptions{Pin: true, TTL: time.Hour})
	must(v, err)
	evs = nil
	return e, clk, &evs
}

func snapshot(e *engine.Engine) map[string]engine.Item {
	m := map[string]engine.Item{}
	for k, it := range e.Items() {
		m[k] = it
	}
	return m
}

func sameItems(a, b map[string]engine.Item) bool {
	return maps.EqualFunc(a, b, func(x, y engine.Item) bool {
		return string(x.Value) == string(y.Value) && x.Version == y.Version && x.TTL == y.TTL && x.Pinned == y.Pinned
	})
}

// badCase is one bad input: run calls the engine and returns the error it
// got and a description of the other results; want is the sentinel the
// call must return (nil: no error, a miss or false instead, which result
// checks).
type badCase struct {
	name   string
	run    func(e *engine.Engine) (string, error)
	want   error
	result string // expected description of the other results ("" = don't care)
	// changes, if set, is the key the call may legitimately remove (an
	// Expire with a due deadline deletes, as Redis's EXPIRE does).
	changes string
}

func wr(v uint64, err error) (string, error) { return fmt.Sprintf("v=%d", v), err }
func wr3(v uint64, ok bool, err error) (string, error) {
	return fmt.Sprintf("v=%d ok=%v", v, ok), err
}
func ir(n int64, err error) (string, error) { return fmt.Sprintf("n=%d", n), err }
func br(ok bool, err error) (string, error) { return fmt.Sprintf("ok=%v", ok), err }
func gr(v []byte, ok bool) (string, error)  { return fmt.Sprintf("%q %v", v, ok), nil }

var (
	longKey   = strings.Repeat("x", badMaxKey+1)
	hugeKey   = strings.Repeat("h", 1<<20)
	maxDur    = time.Duration(math.MaxInt64)
	minDur    = time.Duration(math.MinInt64)
	endOfTime = time.Unix(0, math.MaxInt64)
)

func badCases() []badCase {
	year := func(y int) time.Time { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC) }
	var cs []badCase
	add := func(c ...badCase) { cs = append(cs, c...) }

	// Keys: an oversized key is ErrKeyTooLarge on every call that returns
	// an error, and a miss on every other.
	for _, k := range []struct{ name, key string }{{"key+1", longKey}, {"1MiB key", hugeKey}} {
		key := k.key
		add(
			badCase{name: "Set " + k.name, run: func(e *engine.Engine) (string, error) { return wr(e.Set(key, []byte("v"))) }, want: engine.ErrKeyTooLarge, result: "v=0"},
			badCase{name: "SetTTL " + k.name, run: func(e *engine.Engine) (string, error) { return wr(e.SetTTL(key, []byte("v"), time.Second)) }, want: engine.ErrKeyTooLarge, result: "v=0"},
			badCase{name: "SetWith IfAbsent " + k.name, run: func(e *engine.Engine) (string, error) {
				return wr3(e.SetWith(key, nil, engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: engine.NoTTL}))
			}, want: engine.ErrKeyTooLarge, result: "v=0 ok=false"},
			badCase{name: "CompareAndSwap " + k.name, run: func(e *engine.Engine) (string, error) { return wr3(e.CompareAndSwap(key, 1, []byte("v"))) }, want: engine.ErrKeyTooLarge, result: "v=0 ok=false"},
			badCase{name: "Incr " + k.name, run: func(e *engine.Engine) (string, error) { return ir(e.Incr(key)) }, want: engine.ErrKeyTooLarge, result: "n=0"},
			badCase{name: "IncrWith " + k.name, run: func(e *engine.Engine) (string, error) {
				return ir(e.IncrWith(key, 5, engine.IncrOptions{TTL: time.Second, Pin: true}))
			}, want: engine.ErrKeyTooLarge, result: "n=0"},
			badCase{name: "Commit op " + k.name, run: func(e *engine.Engine) (string, error) {
				_, ok, err := e.Commit(nil, []engine.Op{{Key: "plain", Value: []byte("changed"), TTL: engine.NoTTL}, {Key: key, Value: []byte("v"), TTL: engine.NoTTL}})
				return fmt.Sprintf("ok=%v", ok), err
			}, want: engine.ErrKeyTooLarge, result: "ok=false"},
			badCase{name: "Commit precondition " + k.name, run: func(e *engine.Engine) (string, error) {
				_, ok, err := e.Commit([]engine.Precondition{{Key: key}}, []engine.Op{{Key: "plain", Delete: true}})
				return fmt.Sprintf("ok=%v", ok), err
			}, want: engine.ErrKeyTooLarge, result: "ok=false"},
			badCase{name: "Get " + k.name, run: func(e *engine.Engine) (string, error) { return gr(e.Get(key)) }, result: `"" false`},
			badCase{name: "GetItem " + k.name, run: func(e *engine.Engine) (string, error) {
				it, ok := e.GetItem(key)
				return fmt.Sprintf("%d %v", it.Version, ok), nil
			}, result: "0 false"},
			badCase{name: "TTL " + k.name, run: func(e *engine.Engine) (string, error) {
				d, ok := e.TTL(key)
				return fmt.Sprintf("%v %v", d, ok), nil
			}, result: "0s false"},
			badCase{name: "Delete " + k.name, run: func(e *engine.Engine) (string, error) { return fmt.Sprint(e.Delete(key)), nil }, result: "false"},
			badCase{name: "GetAndDelete " + k.name, run: func(e *engine.Engine) (string, error) { return gr(e.GetAndDelete(key)) }, result: `"" false`},
			badCase{name: "CompareAndDelete " + k.name, run: func(e *engine.Engine) (string, error) { return fmt.Sprint(e.CompareAndDelete(key, 1)), nil }, result: "false"},
			badCase{name: "Expire " + k.name, run: func(e *engine.Engine) (string, error) {
				return br(e.Expire(key, time.Second, engine.ExpireConditionAlways))
			}, want: engine.ErrKeyTooLarge, result: "ok=false"},
			badCase{name: "ExpireAt " + k.name, run: func(e *engine.Engine) (string, error) {
				return br(e.ExpireAt(key, badStart.Add(time.Second), engine.ExpireConditionAlways))
			}, want: engine.ErrKeyTooLarge, result: "ok=false"},
			badCase{name: "CompareAndSwap MustBeAbsent " + k.name, run: func(e *engine.Engine) (string, error) {
				return wr3(e.CompareAndSwap(key, engine.MustBeAbsent, []byte("v")))
			}, want: engine.ErrKeyTooLarge, result: "v=0 ok=false"},
			badCase{name: "Persist " + k.name, run: func(e *engine.Engine) (string, error) { return br(e.Persist(key)) }, want: engine.ErrKeyTooLarge, result: "ok=false"},
			badCase{name: "Pin " + k.name, run: func(e *engine.Engine) (string, error) { return br(e.Pin(key, true)) }, want: engine.ErrKeyTooLarge, result: "ok=false"},
			badCase{name: "GetAndExpire " + k.name, run: func(e *engine.Engine) (string, error) {
				_, ok, err := e.GetAndExpire(key, time.Second)
				return br(ok, err)
			}, want: engine.ErrKeyTooLarge, result: "ok=false"},
		)
	}

	// Values: nil is an empty value; one larger than a shard's cap is
	// ErrTooLarge, also when it would replace an existing key.
	tooBig := make([]byte, 4096)
	add(
		badCase{name: "Set value > cap", run: func(e *engine.Engine) (string, error) { return wr(e.Set("new", tooBig)) }, want: engine.ErrTooLarge, result: "v=0"},
		badCase{name: "Set value > cap over existing", run: func(e *engine.Engine) (string, error) { return wr(e.Set("plain", tooBig)) }, want: engine.ErrTooLarge, result: "v=0"},
		badCase{name: "SetTTL value > cap", run: func(e *engine.Engine) (string, error) { return wr(e.SetTTL("ttl", tooBig, time.Second)) }, want: engine.ErrTooLarge, result: "v=0"},
		badCase{name: "CompareAndSwap value > cap", run: func(e *engine.Engine) (string, error) {
			it, _ := e.GetItem("plain")
			return wr3(e.CompareAndSwap("plain", it.Version, tooBig))
		}, want: engine.ErrTooLarge, result: "v=0 ok=false"},
		badCase{name: "Commit value > cap", run: func(e *engine.Engine) (string, error) {
			_, ok, err := e.Commit(nil, []engine.Op{{Key: "plain", Delete: true}, {Key: "new", Value: tooBig, TTL: engine.NoTTL}})
			return fmt.Sprintf("ok=%v", ok), err
		}, want: engine.ErrTooLarge, result: "ok=false"},
		badCase{name: "IfAbsent nil value on existing key", run: func(e *engine.Engine) (string, error) {
			return wr3(e.SetWith("plain", nil, engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: engine.NoTTL}))
		}, result: "v=0 ok=false"},
	)

	// TTLs: zero (a computed TTL that rounded down is never "forever"),
	// negative other than NoTTL, minimal and overflowing durations.
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"0", 0}, {"-2ns", -2}, {"-1h", -time.Hour}, {"MinInt64", minDur}} {
		ttl := d.d
		add(
			badCase{name: "SetTTL ttl " + d.name, run: func(e *engine.Engine) (string, error) { return wr(e.SetTTL("ttl", []byte("new"), ttl)) }, want: engine.ErrInvalidTTL, result: "v=0"},
			badCase{name: "GetAndExpire ttl " + d.name, run: func(e *engine.Engine) (string, error) {
				it, ok, err := e.GetAndExpire("ttl", ttl)
				return fmt.Sprintf("%d %v", it.Version, ok), err
			}, want: engine.ErrInvalidTTL, result: "0 false"},
		)
		{
			add(
				badCase{name: "SetWith ttl " + d.name, run: func(e *engine.Engine) (string, error) {
					return wr3(e.SetWith("plain", []byte("new"), engine.SetOptions{TTL: ttl}))
				}, want: engine.ErrInvalidTTL, result: "v=0 ok=false"},
				badCase{name: "IncrWith ttl " + d.name, run: func(e *engine.Engine) (string, error) {
					return ir(e.IncrWith("fresh", 1, engine.IncrOptions{TTL: ttl}))
				}, want: engine.ErrInvalidTTL, result: "n=0"},
				badCase{name: "Commit ttl " + d.name, run: func(e *engine.Engine) (string, error) {
					_, ok, err := e.Commit(nil, []engine.Op{{Key: "plain", Delete: true}, {Key: "new", Value: []byte("v"), TTL: ttl}})
					return fmt.Sprintf("ok=%v", ok), err
				}, want: engine.ErrInvalidTTL, result: "ok=false"},
			)
		}
	}
	for _, d := range []struct {
		name string
		d    func() time.Duration
	}{
		{"MaxInt64", func() time.Duration { return maxDur }},
		{"MaxInt64-now+1h", func() time.Duration { return time.Duration(math.MaxInt64-badStart.UnixNano()) + time.Hour }},
		{"to year 2262+1ns", func() time.Duration { return time.Duration(math.MaxInt64-badStart.UnixNano()) + 1 }},
	} {
		ttl := d.d()
		add(
			badCase{name: "SetTTL overflow " + d.name, run: func(e *engine.Engine) (string, error) { return wr(e.SetTTL("ttl", []byte("new"), ttl)) }, want: engine.ErrInvalidTTL, result: "v=0"},
			badCase{name: "SetWith overflow " + d.name, run: func(e *engine.Engine) (string, error) {
				return wr3(e.SetWith("plain", []byte("new"), engine.SetOptions{TTL: ttl}))
			}, want: engine.ErrInvalidTTL, result: "v=0 ok=false"},
			badCase{name: "SetWith TTLOnCreate overflow " + d.name, run: func(e *engine.Engine) (string, error) {
				return wr3(e.SetWith("fresh", []byte("new"), engine.SetOptions{TTL: ttl, TTLOnCreate: true}))
			}, want: engine.ErrInvalidTTL, result: "v=0 ok=false"},
			badCase{name: "GetAndExpire overflow " + d.name, run: func(e *engine.Engine) (string, error) {
				_, ok, err := e.GetAndExpire("ttl", ttl)
				return br(ok, err)
			}, want: engine.ErrInvalidTTL, result: "ok=false"},
			badCase{name: "Expire overflow " + d.name, run: func(e *engine.Engine) (string, error) {
				return br(e.Expire("plain", ttl, engine.ExpireConditionAlways))
			}, want: engine.ErrInvalidTTL, result: "ok=false"},
			badCase{name: "IncrWith creating overflow " + d.name, run: func(e *engine.Engine) (string, error) {
				return ir(e.IncrWith("fresh", 1, engine.IncrOptions{TTL: ttl}))
			}, want: engine.ErrInvalidTTL, result: "n=0"},
			badCase{name: "Commit overflow " + d.name, run: func(e *engine.Engine) (string, error) {
				_, ok, err := e.Commit(nil, []engine.Op{{Key: "plain", Delete: true}, {Key: "new", Value: []byte("v"), TTL: ttl}})
				return fmt.Sprintf("ok=%v", ok), err
			}, want: engine.ErrInvalidTTL, result: "ok=false"},
		)
	}
	// A TTL that fits exactly (deadline = MaxInt64) is valid; it is tested
	// by TestTTLAtTheEndOfTime. Absolute deadlines past 2262:
	for _, at := range []struct {
		name string
		t    time.Time
	}{{"2262 end+1ns", endOfTime.Add(1)}, {"year 2263", year(2263)}, {"year 3000", year(3000)}, {"year 10000", year(10000)}, {"max time", time.Unix(1<<62, 0)}} {
		tm := at.t
		add(badCase{name: "ExpireAt " + at.name, run: func(e *engine.Engine) (string, error) {
			return br(e.ExpireAt("plain", tm, engine.ExpireConditionAlways))
		}, want: engine.ErrInvalidTTL, result: "ok=false"})
	}
	// Deadlines in the past (also before int64 time) delete, as Redis's
	// EXPIREAT does.
	for _, at := range []struct {
		name string
		t    time.Time
	}{{"year 1500", year(1500)}, {"year 1000", year(1000)}, {"year 1", year(1)}, {"zero Time", time.Time{}}, {"1970", time.Unix(0, 0)}, {"now", badStart}} {
		tm := at.t
		add(badCase{name: "ExpireAt " + at.name + " deletes", run: func(e *engine.Engine) (string, error) {
			ok, err := e.ExpireAt("plain", tm, engine.ExpireConditionAlways)
			_, found := e.Get("plain")
			return fmt.Sprintf("ok=%v found=%v", ok, found), err
		}, result: "ok=true found=false", changes: "plain"})
	}
	// Expire takes a duration: ≤ 0 (NoTTL included) is refused and the
	// key left as it was; a due deadline is ExpireAt's to say.
	for _, d := range []time.Duration{0, engine.NoTTL, minDur} {
		add(badCase{name: fmt.Sprintf("Expire ttl %v refused", d), run: func(e *engine.Engine) (string, error) {
			ok, err := e.Expire("plain", d, engine.ExpireConditionAlways)
			_, found := e.Get("plain")
			return fmt.Sprintf("ok=%v found=%v", ok, found), err
		}, want: engine.ErrInvalidTTL, result: "ok=false found=true"})
	}

	// Contradictory options.
	add(
		badCase{name: "SetWith TTL+KeepTTL", run: func(e *engine.Engine) (string, error) {
			return wr3(e.SetWith("ttl", []byte("x"), engine.SetOptions{TTL: time.Second, KeepTTL: true}))
		}, want: engine.ErrInvalidOptions, result: "v=0 ok=false"},
		badCase{name: "SetWith NoTTL+KeepTTL", run: func(e *engine.Engine) (string, error) {
			return wr3(e.SetWith("ttl", []byte("x"), engine.SetOptions{TTL: engine.NoTTL, KeepTTL: true}))
		}, want: engine.ErrInvalidOptions, result: "v=0 ok=false"},
		badCase{name: "SetWith Only=3", run: func(e *engine.Engine) (string, error) {
			return wr3(e.SetWith("plain", []byte("x"), engine.SetOptions{Only: 3, TTL: engine.NoTTL}))
		}, want: engine.ErrInvalidOptions, result: "v=0 ok=false"},
		badCase{name: "SetWith Only=255", run: func(e *engine.Engine) (string, error) {
			return wr3(e.SetWith("plain", []byte("x"), engine.SetOptions{Only: 255, TTL: engine.NoTTL}))
		}, want: engine.ErrInvalidOptions, result: "v=0 ok=false"},
		badCase{name: "SetWith IfAbsent+IfVersion", run: func(e *engine.Engine) (string, error) {
			return wr3(e.SetWith("plain", []byte("x"), engine.SetOptions{Only: engine.ConditionIfAbsent, IfVersion: 1, TTL: engine.NoTTL}))
		}, want: engine.ErrInvalidOptions, result: "v=0 ok=false"},
		badCase{name: "Expire condition 5", run: func(e *engine.Engine) (string, error) { return br(e.Expire("ttl", time.Second, 5)) }, want: engine.ErrInvalidOptions, result: "ok=false"},
		badCase{name: "Expire condition 255 ttl 0", run: func(e *engine.Engine) (string, error) { return br(e.Expire("plain", 0, 255)) }, want: engine.ErrInvalidOptions, result: "ok=false"},
		badCase{name: "ExpireAt condition 200", run: func(e *engine.Engine) (string, error) { return br(e.ExpireAt("plain", badStart, 200)) }, want: engine.ErrInvalidOptions, result: "ok=false"},
		badCase{name: "Commit TTL+KeepTTL", run: func(e *engine.Engine) (string, error) {
			_, ok, err := e.Commit(nil, []engine.Op{{Key: "plain", Delete: true}, {Key: "ttl", Value: []byte("v"), TTL: time.Second, KeepTTL: true}})
			return fmt.Sprintf("ok=%v", ok), err
		}, want: engine.ErrInvalidOptions, result: "ok=false"},
		badCase{name: "Commit duplicate key", run: func(e *engine.Engine) (string, error) {
			_, ok, err := e.Commit(nil, []engine.Op{{Key: "plain", Value: []byte("1"), TTL: engine.NoTTL}, {Key: "plain", Delete: true}})
			return fmt.Sprintf("ok=%v", ok), err
		}, want: engine.ErrInvalidOptions, result: "ok=false"},
	)

	// Counters: non-integers and overflow leave the value unchanged.
	for _, k := range []string{"text", "plain", "ttl"} {
		key := k
		add(badCase{name: "Incr non-integer " + k, run: func(e *engine.Engine) (string, error) { return ir(e.Incr(key)) }, want: engine.ErrNotInteger, result: "n=0"})
	}
	for _, v := range []string{"", " 1", "1 ", "+1", "007", "-0", "0x10", "1e3", "9223372036854775808", "-9223372036854775809", "99999999999999999999999", "１", "1\x00"} {
		val := v
		add(badCase{name: fmt.Sprintf("IncrBy on %q", v), run: func(e *engine.Engine) (string, error) {
			if _, err := e.Set("text", []byte(val)); err != nil {
				return "set failed", err
			}
			n, err := e.IncrBy("text", 1)
			got, _ := e.Get("text")
			return fmt.Sprintf("n=%d value=%q", n, got), err
		}, want: engine.ErrNotInteger, result: fmt.Sprintf("n=0 value=%q", val), changes: "text"})
	}
	add(
		badCase{name: "Incr MaxInt64", run: func(e *engine.Engine) (string, error) { return ir(e.Incr("big")) }, want: engine.ErrOverflow, result: "n=0"},
		badCase{name: "IncrBy MaxInt64 on 41", run: func(e *engine.Engine) (string, error) { return ir(e.IncrBy("n", math.MaxInt64)) }, want: engine.ErrOverflow, result: "n=0"},
		badCase{name: "Decr MinInt64", run: func(e *engine.Engine) (string, error) { return ir(e.Decr("small")) }, want: engine.ErrOverflow, result: "n=0"},
		badCase{name: "IncrBy MinInt64 on MinInt64", run: func(e *engine.Engine) (string, error) { return ir(e.IncrBy("small", math.MinInt64)) }, want: engine.ErrOverflow, result: "n=0"},
		badCase{name: "DecrBy MinInt64", run: func(e *engine.Engine) (string, error) { return ir(e.DecrBy("n", math.MinInt64)) }, want: engine.ErrOverflow, result: "n=0"},
		badCase{name: "DecrBy MinInt64 missing key", run: func(e *engine.Engine) (string, error) { return ir(e.DecrBy("fresh", math.MinInt64)) }, want: engine.ErrOverflow, result: "n=0"},
		badCase{name: "DecrBy -MaxInt64 on MaxInt64", run: func(e *engine.Engine) (string, error) { return ir(e.DecrBy("big", -math.MaxInt64)) }, want: engine.ErrOverflow, result: "n=0"},
	)

	// Versions that never existed (or no longer exist).
	for _, v := range []struct {
		name string
		v    func(e *engine.Engine) uint64
	}{
		{"MaxUint64", func(*engine.Engine) uint64 { return math.MaxUint64 }},
		{"current+1", func(e *engine.Engine) uint64 { it, _ := e.GetItem("plain"); return it.Version + 1 }},
		{"another key's", func(e *engine.Engine) uint64 { it, _ := e.GetItem("n"); return it.Version }},
		{"zero", func(*engine.Engine) uint64 { return 0 }},
	} {
		ver := v.v
		add(
			badCase{name: "CompareAndSwap version " + v.name, run: func(e *engine.Engine) (string, error) { return wr3(e.CompareAndSwap("plain", ver(e), []byte("x"))) }, result: "v=0 ok=false"},
			badCase{name: "CompareAndDelete version " + v.name, run: func(e *engine.Engine) (string, error) { return fmt.Sprint(e.CompareAndDelete("plain", ver(e))), nil }, result: "false"},
			badCase{name: "Commit precondition version " + v.name, run: func(e *engine.Engine) (string, error) {
				_, ok, err := e.Commit([]engine.Precondition{{Key: "plain", Version: ver(e)}}, []engine.Op{{Key: "plain", Delete: true}, {Key: "n", Value: []byte("0"), TTL: engine.NoTTL}})
				return fmt.Sprintf("ok=%v", ok), err
			}, result: "ok=false"},
		)
		if v.name != "zero" {
			add(
				badCase{name: "SetWith IfVersion " + v.name, run: func(e *engine.Engine) (string, error) {
					return wr3(e.SetWith("plain", []byte("x"), engine.SetOptions{IfVersion: ver(e), TTL: engine.NoTTL}))
				}, result: "v=0 ok=false"},
				badCase{name: "CompareAndSwap missing key version " + v.name, run: func(e *engine.Engine) (string, error) { return wr3(e.CompareAndSwap("missing", ver(e), []byte("x"))) }, result: "v=0 ok=false"},
			)
		}
	}
	add(badCase{name: "Commit precondition absent on existing key", run: func(e *engine.Engine) (string, error) {
		_, ok, err := e.Commit([]engine.Precondition{{Key: "plain", Version: 0}}, []engine.Op{{Key: "plain", Value: []byte("x"), TTL: engine.NoTTL}})
		return fmt.Sprintf("ok=%v", ok), err
	}, result: "ok=false"})
	add(badCase{name: "CompareAndSwap stale version after overwrite", run: func(e *engine.Engine) (string, error) {
		it, _ := e.GetItem("text")
		if _, err := e.Set("text", []byte("abc")); err != nil { // same value, new version
			return "", err
		}
		return wr3(e.CompareAndSwap("text", it.Version, []byte("x")))
	}, result: "v=0 ok=false", changes: "text"})

	// Calls on keys that do not exist.
	add(
		badCase{name: "Expire missing", run: func(e *engine.Engine) (string, error) {
			return br(e.Expire("missing", time.Second, engine.ExpireConditionAlways))
		}, result: "ok=false"},
		badCase{name: "Persist missing", run: func(e *engine.Engine) (string, error) { return br(e.Persist("missing")) }, result: "ok=false"},
		badCase{name: "Persist no TTL", run: func(e *engine.Engine) (string, error) { return br(e.Persist("plain")) }, result: "ok=false"},
		badCase{name: "Pin missing", run: func(e *engine.Engine) (string, error) { return br(e.Pin("missing", true)) }, result: "ok=false"},
		badCase{name: "GetAndExpire missing", run: func(e *engine.Engine) (string, error) {
			_, ok, err := e.GetAndExpire("missing", time.Second)
			return br(ok, err)
		}, result: "ok=false"},
		badCase{name: "SetWith IfPresent missing", run: func(e *engine.Engine) (string, error) {
			return wr3(e.SetWith("missing", []byte("x"), engine.SetOptions{Only: engine.ConditionIfPresent, TTL: engine.NoTTL}))
		}, result: "v=0 ok=false"},
	)
	return cs
}

// TestBadInputs runs every bad input against a populated engine and checks
// that each gets its error (or miss), that nothing else changed (values,
// versions, TTLs, pinning of every key), that no removal other than the
// allowed one was reported, and that the invariants hold.
func TestBadInputs(t *testing.T) {
	cs := badCases()
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			e, _, evs := badFixture(t)
			before := snapshot(e)
			res, err := c.run(e)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "tide: ") {
				t.Errorf("error %q lacks the tide: prefix", err)
			}
			if c.result != "" && res != c.result {
				t.Errorf("result %s, want %s", res, c.result)
			}
			after := snapshot(e)
			if c.changes != "" {
				delete(before, c.changes)
				delete(after, c.changes)
			}
			if !sameItems(before, after) {
				t.Errorf("data changed:\nbefore %v\nafter  %v", before, after)
			}
			for _, r := range *evs {
				if r.Key != c.changes {
					t.Errorf("unexpected removal %q (%v)", r.Key, r.Cause)
				}
			}
			if err := e.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("%d bad inputs", len(cs))
}

// TestBadConfig checks that New rejects nonsense configurations with an
// error that wraps ErrInvalidConfig and names the field, and accepts the
// odd but meaningful ones.
func TestBadConfig(t *testing.T) {
	bad := []struct {
		field string
		cfg   engine.Config
	}{
		{"Shards", engine.Config{Shards: -1}},
		{"Shards", engine.Config{Shards: math.MinInt}},
		{"Shards", engine.Config{Shards: 1<<16 + 1}},
		{"Shards", engine.Config{Shards: math.MaxInt}},
		{"MaxKeySize", engine.Config{MaxKeySize: -1}},
		{"MaxKeySize", engine.Config{MaxKeySize: math.MaxInt}},
		{"MaxBytes", engine.Config{MaxBytes: -1}},
		{"MaxBytes", engine.Config{MaxBytes: math.MinInt64}},
		{"MaxBytes", engine.Config{MaxBytes: 1}},                                   // room for no entry
		{"MaxBytes", engine.Config{MaxBytes: engine.EntryOverhead - 1, Shards: 1}}, // room for no entry
		{"ExpiryBudget", engine.Config{ExpiryBudget: expiryBudget(-1, 0, 0)}},
		{"ExpiryBudget", engine.Config{ExpiryBudget: expiryBudget(0, -1, 0)}},
		{"ExpiryBudget", engine.Config{ExpiryBudget: expiryBudget(0, 0, -time.Second)}},
		{"Policy", engine.Config{Policy: evict.Spec{Name: "allkeys-bogus"}}},
	}
	for _, c := range bad {
		e, err := engine.New(c.cfg)
		if err == nil {
			e.Close()
			t.Errorf("New(%+v) accepted", c.cfg)
			continue
		}
		if !errors.Is(err, engine.ErrInvalidConfig) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig naming %s", c.cfg, err, c.field)
		}
	}
	ok := []engine.Config{
		{},
		{Shards: 3}, // rounded up to 4
		{Shards: 1 << 16},
		{MaxBytes: engine.EntryOverhead, Shards: 1 << 16}, // one empty entry, many shards
		{MaxBytes: 200, Shards: 256},                      // more shards than bytes: one cap still
		{MaxBytes: engine.EntryOverhead},                  // default shards reduced to 1
		{ExpiryInterval: -time.Hour},                      // no background goroutine
		{ExpiryInterval: time.Nanosecond},                 // a very busy goroutine
		{MaxKeySize: 1},
		{Policy: evict.NoEviction, MaxBytes: 1 << 20},
	}
	for _, cfg := range ok {
		e, err := engine.New(cfg)
		if err != nil {
			t.Errorf("New(%+v): %v", cfg, err)
			continue
		}
		if err := e.Check(); err != nil {
			t.Error(err)
		}
		e.Close()
	}
	// The degenerate ones behave as documented.
	e, _ := engine.New(engine.Config{MaxBytes: engine.EntryOverhead, Shards: 1 << 16, ExpiryInterval: -1})
	defer e.Close()
	if _, err := e.Set("k", nil); !errors.Is(err, engine.ErrTooLarge) {
		t.Errorf("Set 1-byte key under MaxBytes EntryOverhead: %v, want ErrTooLarge", err)
	}
	if _, err := e.Set("", nil); err != nil {
		t.Errorf("Set empty entry under MaxBytes EntryOverhead: %v", err)
	}
	if _, err := e.Set("", []byte("v")); !errors.Is(err, engine.ErrTooLarge) {
		t.Errorf("Set 1-byte value under MaxBytes EntryOverhead: %v, want ErrTooLarge", err)
	}
	e2, _ := engine.New(engine.Config{MaxKeySize: 1, ExpiryInterval: -1})
	defer e2.Close()
	if _, err := e2.Set("kk", nil); !errors.Is(err, engine.ErrKeyTooLarge) {
		t.Errorf("Set 2-byte key under MaxKeySize 1: %v, want ErrKeyTooLarge", err)
	}
	if _, err := e2.Set("", nil); err != nil {
		t.Errorf("Set empty key: %v", err)
	}
}

// TestTTLAtTheEndOfTime: a deadline of exactly MaxInt64 is valid, one
// nanosecond more is not, and a clock standing at the end of time neither
// overflows nor resurrects.
func TestTTLAtTheEndOfTime(t *testing.T) {
	e, clk, _ := badFixture(t)
	ttl := time.Duration(math.MaxInt64 - clk.Now())
	if _, err := e.SetTTL("end", []byte("v"), ttl); err != nil {
		t.Fatalf("SetTTL to exactly MaxInt64: %v", err)
	}
	if d, ok := e.TTL("end"); !ok || d != ttl {
		t.Fatalf("TTL = %v %v, want %v", d, ok, ttl)
	}
	if ok, err := e.ExpireAt("plain", endOfTime, engine.ExpireConditionAlways); !ok || err != nil {
		t.Fatalf("ExpireAt(end of time) = %v %v", ok, err)
	}
	clk.Set(time.Unix(0, math.MaxInt64-1))
	if _, ok := e.Get("end"); !ok {
		t.Fatal("key with deadline MaxInt64 gone at MaxInt64-1")
	}
	if _, err := e.SetTTL("x", []byte("v"), 2); !errors.Is(err, engine.ErrInvalidTTL) {
		t.Fatalf("SetTTL 2ns at MaxInt64-1: %v, want ErrInvalidTTL", err)
	}
	if _, err := e.SetTTL("x", []byte("v"), 1); err != nil {
		t.Fatalf("SetTTL 1ns at MaxInt64-1: %v", err)
	}
	clk.Set(time.Unix(0, math.MaxInt64))
	if st := e.Stats(); st.Due == 0 {
		t.Errorf("Stats.Due = 0 at the end of time with due keys")
	}
	for _, k := range []string{"end", "plain", "ttl", "pinned", "x"} {
		if _, ok := e.Get(k); ok {
			t.Errorf("%q visible at the end of time", k)
		}
	}
	if n, _ := e.RunExpiryCycle(); n != 0 {
		t.Errorf("cycle after lazy expiry removed %d", n)
	}
	if _, err := e.Incr("c"); err != nil {
		t.Errorf("Incr at the end of time: %v", err)
	}
	if _, err := e.IncrWith("c2", 1, engine.IncrOptions{TTL: 1}); !errors.Is(err, engine.ErrInvalidTTL) {
		t.Errorf("IncrWith TTL at the end of time: %v, want ErrInvalidTTL", err)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

// keysInShard returns n keys that e places in shard i (the placement
// depends on the engine's secret hash seed).
func keysInShard(e *engine.Engine, i, n int, prefix string) []string {
	var out []string
	for j := 0; len(out) < n; j++ {
		k := fmt.Sprint(prefix, j)
		if e.ShardIndex(k) == i {
			out = append(out, k)
		}
	}
	return out
}

// TestCommitOOMEvictsNothing: a Commit that fails with ErrOutOfMemory must change nothing, also in the shards
// where room could have been made.
func TestCommitOOMEvictsNothing(t *testing.T) {
	for range 20 { // the engine visits shards in map order
		var evs []engine.Removal
		// Room for two and three quarters of the 150-byte entries: the
		// Commit's three do not fit, even with a[0] evicted.
		e, err := engine.New(engine.Config{Shards: 2, ExpiryInterval: -1, MaxBytes: 2*(150+engine.EntryOverhead) + 150, Policy: evict.AllKeysLRU,
			OnRemove: func(r engine.Removal) { evs = append(evs, r) }})
		if err != nil {
			t.Fatal(err)
		}
		a, b := keysInShard(e, 0, 2, "a"), keysInShard(e, 1, 2, "b")
		if _, err := e.Set(a[0], make([]byte, 150)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.SetWith(b[0], make([]byte, 150), engine.SetOptions{Pin: true, TTL: engine.NoTTL}); err != nil {
			t.Fatal(err)
		}
		_, ok, err := e.Commit(nil, []engine.Op{{Key: a[1], Value: make([]byte, 150), TTL: engine.NoTTL}, {Key: b[1], Value: make([]byte, 150), TTL: engine.NoTTL}})
		if ok || !errors.Is(err, engine.ErrOutOfMemory) {
			t.Fatalf("Commit = %v %v, want ErrOutOfMemory", ok, err)
		}
		if len(evs) != 0 {
			t.Fatalf("failed Commit removed %q (%v)", evs[0].Key, evs[0].Cause)
		}
		if _, found := e.Get(a[0]); !found {
			t.Fatalf("failed Commit lost %q", a[0])
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
		e.Close()
	}
}

func expiryBudget(count, batch int, d time.Duration) expiry.Budget {
	return expiry.Budget{Count: count, Batch: batch, Time: d}
}
