package typed_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidekv/tide/cas"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/typed"
)

// modelEntry is the reference for one key: a decoded value (or raw bytes
// that do not decode), its version and its deadline (0: none).
type modelEntry struct {
	val      user
	corrupt  bool
	version  uint64
	deadline time.Duration
}

// TestMapModel runs random operations on a Map[user] (JSON codec, with a
// prefix) and on a plain Go map, and checks every result, the engine's
// invariants after each step, and that versions only grow.
func TestMapModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e, clk := newEngine(t)
		m := newMap(t, e, typed.Config[user]{Prefix: "u/"})
		model := map[string]modelEntry{}
		var now time.Duration
		var lastVersion = map[string]uint64{}

		keyGen := rapid.SampledFrom([]string{"a", "b", "c", ""})
		valGen := rapid.Custom(func(rt *rapid.T) user {
			return user{Name: rapid.StringN(0, 4, 8).Draw(rt, "name"), Admin: rapid.Bool().Draw(rt, "admin")}
		})
		live := func(k string) (modelEntry, bool) {
			en, ok := model[k]
			if ok && en.deadline != 0 && now >= en.deadline {
				delete(model, k)
				return modelEntry{}, false
			}
			return en, ok
		}
		wrote := func(k string, ver uint64) {
			if ver <= lastVersion[k] {
				rt.Fatalf("key %q: new version %d not above %d", k, ver, lastVersion[k])
			}
			lastVersion[k] = ver
		}

		rt.Repeat(map[string]func(*rapid.T){
			"Set": func(rt *rapid.T) {
				k, v := keyGen.Draw(rt, "k"), valGen.Draw(rt, "v")
				ver, err := m.Set(k, v)
				if err != nil {
					rt.Fatal(err)
				}
				wrote(k, ver)
				model[k] = modelEntry{val: v, version: ver}
			},
			"SetTTL": func(rt *rapid.T) {
				k, v := keyGen.Draw(rt, "k"), valGen.Draw(rt, "v")
				ttl := time.Duration(rapid.IntRange(1, 5).Draw(rt, "ttl")) * time.Second
				ver, err := m.SetTTL(k, v, ttl)
				if err != nil {
					rt.Fatal(err)
				}
				wrote(k, ver)
				model[k] = modelEntry{val: v, version: ver, deadline: now + ttl}
			},
			"SetIfAbsent": func(rt *rapid.T) {
				k, v := keyGen.Draw(rt, "k"), valGen.Draw(rt, "v")
				_, exists := live(k)
				ver, ok, err := m.SetWith(k, v, engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: engine.NoTTL})
				if err != nil || ok == exists {
					rt.Fatalf("SetWith(IfAbsent) on exists=%v: ok=%v err=%v", exists, ok, err)
				}
				if ok {
					wrote(k, ver)
					model[k] = modelEntry{val: v, version: ver}
				}
			},
			"Corrupt": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				ver, err := e.Set("u/"+k, []byte("{not json"))
				if err != nil {
					rt.Fatal(err)
				}
				wrote(k, ver)
				model[k] = modelEntry{corrupt: true, version: ver}
			},
			"Get": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				want, exists := live(k)
				got, ok, err := m.Get(k)
				checkRead(rt, "Get", want, exists, got, ok, err)
			},
			"GetItem": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				want, exists := live(k)
				it, ok, err := m.GetItem(k)
				checkRead(rt, "GetItem", want, exists, it.Value, ok, err)
				if exists && !want.corrupt {
					wantTTL := engine.NoTTL
					if want.deadline != 0 {
						wantTTL = want.deadline - now
					}
					if it.Version != want.version || it.TTL != wantTTL {
						rt.Fatalf("GetItem(%q) = version %d TTL %v, want %d %v", k, it.Version, it.TTL, want.version, wantTTL)
					}
				}
			},
			"CompareAndSwap": func(rt *rapid.T) {
				k, v := keyGen.Draw(rt, "k"), valGen.Draw(rt, "v")
				want, exists := live(k)
				old := want.version
				if rapid.Bool().Draw(rt, "stale") {
					old = lastVersion[k] + 1 // a version this key never had
				}
				ver, ok, err := m.CompareAndSwap(k, old, v)
				wantOK := exists && old == want.version
				if err != nil || ok != wantOK {
					rt.Fatalf("CAS(%q, %d) = %v, %v; want %v", k, old, ok, err, wantOK)
				}
				if ok {
					wrote(k, ver)
					model[k] = modelEntry{val: v, version: ver, deadline: want.deadline}
				}
			},
			"Update": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				want, exists := live(k)
				v, ver, err := m.Update(k, func(old user, ex bool) (user, error) {
					if ex != exists || old != want.val {
						return user{}, fmt.Errorf("fn saw %+v, %v; want %+v, %v", old, ex, want.val, exists)
					}
					old.Name += "+"
					return old, nil
				}, cas.Options{TTL: engine.NoTTL})
				if want.corrupt {
					if !errors.Is(err, typed.ErrDecode) {
						rt.Fatalf("Update of a corrupt value = %v, want ErrDecode", err)
					}
					return
				}
				if err != nil || v.Name != want.val.Name+"+" {
					rt.Fatalf("Update = %+v, %v", v, err)
				}
				wrote(k, ver)
				model[k] = modelEntry{val: v, version: ver, deadline: want.deadline}
			},
			"Delete": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				_, exists := live(k)
				if got := m.Delete(k); got != exists {
					rt.Fatalf("Delete(%q) = %v, want %v", k, got, exists)
				}
				delete(model, k)
			},
			"GetAndDelete": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				want, exists := live(k)
				got, ok, err := m.GetAndDelete(k)
				checkRead(rt, "GetAndDelete", want, exists, got, ok, err)
				if exists && !want.corrupt {
					delete(model, k)
				}
			},
			"GetAndExpire": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				ttl := time.Duration(rapid.IntRange(1, 5).Draw(rt, "ttl")) * time.Second
				want, exists := live(k)
				it, ok, err := m.GetAndExpire(k, ttl)
				checkRead(rt, "GetAndExpire", want, exists, it.Value, ok, err)
				if exists {
					want.deadline = now + ttl // set even when the value does not decode
					model[k] = want
					if !want.corrupt && (it.Version != want.version || it.TTL != ttl) {
						rt.Fatalf("GetAndExpire(%q) = version %d TTL %v, want %d %v", k, it.Version, it.TTL, want.version, ttl)
					}
				}
			},
			"Expire": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				ttl := time.Duration(rapid.IntRange(1, 5).Draw(rt, "ttl")) * time.Second
				want, exists := live(k)
				done, err := m.Expire(k, ttl, engine.ExpireConditionAlways)
				if err != nil || done != exists {
					rt.Fatalf("Expire(%q) = %v, %v; want %v", k, done, err, exists)
				}
				if exists {
					want.deadline = now + ttl
					model[k] = want
				}
			},
			"Persist": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				want, exists := live(k)
				if got, err := m.Persist(k); err != nil || got != (exists && want.deadline != 0) {
					rt.Fatalf("Persist(%q) = %v, model has deadline %v", k, got, want.deadline)
				}
				if exists {
					want.deadline = 0
					model[k] = want
				}
			},
			"TTL": func(rt *rapid.T) {
				k := keyGen.Draw(rt, "k")
				want, exists := live(k)
				ttl, ok := m.TTL(k)
				wantTTL := engine.NoTTL
				if want.deadline != 0 {
					wantTTL = want.deadline - now
				}
				if ok != exists || (exists && ttl != wantTTL) {
					rt.Fatalf("TTL(%q) = %v, %v; want %v, %v", k, ttl, ok, wantTTL, exists)
				}
			},
			"Advance": func(rt *rapid.T) {
				d := time.Duration(rapid.IntRange(1, 3).Draw(rt, "d")) * time.Second
				clk.Advance(d)
				now += d
			},
			"": func(rt *rapid.T) {
				if err := e.Check(); err != nil {
					rt.Fatal(err)
				}
			},
		})
	})
}

func checkRead(rt *rapid.T, op string, want modelEntry, exists bool, got user, ok bool, err error) {
	switch {
	case !exists:
		if ok || err != nil {
			rt.Fatalf("%s of a missing key = %v, %v", op, ok, err)
		}
	case want.corrupt:
		if !ok || !errors.Is(err, typed.ErrDecode) {
			rt.Fatalf("%s of a corrupt value = %v, %v; want ok and ErrDecode", op, ok, err)
		}
	default:
		if !ok || err != nil || got != want.val {
			rt.Fatalf("%s = %+v, %v, %v; want %+v", op, got, ok, err, want.val)
		}
	}
}
