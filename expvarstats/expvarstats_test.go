package expvarstats_test

import (
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"iter"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expvarstats"
)

// TestMain checks, before any test publishes, that importing the package
// registered nothing.
func TestMain(m *testing.M) {
	var found []string
	expvar.Do(func(kv expvar.KeyValue) {
		if _, ok := kv.Value.(*expvarstats.Var); ok {
			found = append(found, kv.Key)
		}
	})
	if len(found) > 0 {
		fmt.Fprintf(os.Stderr, "import published %v\n", found)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func newEngine(t *testing.T, cfg engine.Config) (*engine.Engine, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Unix(1000, 0))
	cfg.Clock, cfg.ExpiryInterval = clk, -1
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, clk
}

// drive performs a known sequence: 2 hits, 1 miss, 1 replace, 1 delete,
// 1 expiry and (with a cap of one entry) evictions.
func drive(t *testing.T, e *engine.Engine, clk *clock.Manual) {
	t.Helper()
	e.Set("a", []byte("1"))
	e.Set("a", []byte("2")) // replaced
	e.Get("a")
	e.Get("a")
	e.Get("nope")
	e.Set("d", []byte("x"))
	e.Delete("d")
	e.SetTTL("t", []byte("x"), time.Second)
	e.SetTTL("due", []byte("x"), time.Second)
	clk.Advance(time.Second)
	e.Get("t") // lazily expired: a miss
}

func decode(t *testing.T, s string) map[string]int64 {
	t.Helper()
	var got map[string]int64
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatalf("String() = %q: %v", s, err)
	}
	return got
}

func TestVarReportsStats(t *testing.T) {
	e, clk := newEngine(t, engine.Config{Shards: 1})
	var v expvarstats.Var
	if got := v.String(); got != "null" {
		t.Errorf("detached Var = %q, want null", got)
	}
	v.Set(e)
	drive(t, e, clk)
	got := decode(t, v.String())
	st := e.Stats()
	want := map[string]int64{
		"hits": 2, "misses": 2, "writes": 5, "expired": 1, "evicted": 0, "deleted": 1, "replaced": 1,
		"entries": 2, "due": 1, "bytes": st.Bytes, "max_bytes": 0, "arena_bytes": st.ArenaBytes,
		"shards": 1, "calm_shards": int64(st.CalmShards), "listener_panics": 0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("published\n%v\nwant\n%v", got, want)
	}
	if st.Bytes <= 0 {
		t.Errorf("Stats.Bytes = %d with 2 entries", st.Bytes)
	}
}

func TestVarReportsEvictions(t *testing.T) {
	e, _ := newEngine(t, engine.Config{Shards: 1, MaxBytes: 2 * (engine.EntryOverhead + 2), Policy: evict.AllKeysLRU})
	var v expvarstats.Var
	v.Set(e)
	for _, k := range []string{"a", "b", "c", "d"} {
		if _, err := e.Set(k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	got := decode(t, v.String())
	if got["evicted"] != 2 || got["entries"] != 2 || got["max_bytes"] != 2*(engine.EntryOverhead+2) {
		t.Errorf("after 4 writes into room for 2: %v", got)
	}
}

// TestSnapshotCoversStats fails when engine.Stats gains a field that the
// published object does not carry.
func TestSnapshotCoversStats(t *testing.T) {
	e, _ := newEngine(t, engine.Config{})
	var v expvarstats.Var
	v.Set(e)
	got := decode(t, v.String())
	typ := reflect.TypeFor[engine.Stats]()
	for i := range typ.NumField() {
		name := snake(typ.Field(i).Name)
		if _, ok := got[name]; !ok {
			t.Errorf("engine.Stats.%s is not published (want key %q)", typ.Field(i).Name, name)
		}
	}
	if len(got) != typ.NumField() {
		t.Errorf("published %d keys, engine.Stats has %d fields", len(got), typ.NumField())
	}
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestPublish(t *testing.T) {
	e1, _ := newEngine(t, engine.Config{})
	e2, _ := newEngine(t, engine.Config{})

	v, err := expvarstats.Publish("tide-test-publish", e1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Set(nil) }) // expvar names are for the process's life: free it for -count > 1
	if expvar.Get("tide-test-publish") != v {
		t.Fatal("Publish did not publish its Var")
	}
	again, err := expvarstats.Publish("tide-test-publish", e1)
	if err != nil || again != v {
		t.Errorf("publishing the same engine twice = %p, %v; want the same Var, nil", again, err)
	}
	if _, err := expvarstats.Publish("tide-test-publish", e2); !errors.Is(err, expvarstats.ErrNameTaken) {
		t.Errorf("publishing another engine under a taken name = %v, want ErrNameTaken", err)
	}
	if v.Engine() != e1 {
		t.Error("a refused Publish changed the attached engine")
	}
	v.Set(nil)
	reused, err := expvarstats.Publish("tide-test-publish", e2)
	if err != nil || reused != v || v.Engine() != e2 {
		t.Errorf("Publish after detach = %p, %v; want the same Var attached to e2", reused, err)
	}

	if expvar.Get("tide-test-int") == nil { // published once per process (-count > 1)
		expvar.NewInt("tide-test-int")
	}
	if _, err := expvarstats.Publish("tide-test-int", e1); !errors.Is(err, expvarstats.ErrNameTaken) {
		t.Errorf("Publish over an expvar.Int = %v, want ErrNameTaken", err)
	}
	if _, err := expvarstats.Publish("", e1); !errors.Is(err, expvarstats.ErrInvalidName) {
		t.Errorf("Publish(\"\") = %v, want ErrInvalidName", err)
	}
}

// TestPublishRace: concurrent Publish calls for one new name never panic
// and all get the one Var.
func TestPublishRace(t *testing.T) {
	e, _ := newEngine(t, engine.Config{})
	const n = 8
	vars := make([]*expvarstats.Var, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := expvarstats.Publish("tide-test-race", e)
			if err != nil {
				t.Error(err)
			}
			vars[i] = v
		}()
	}
	wg.Wait()
	if vars[0] != nil {
		t.Cleanup(func() { vars[0].Set(nil) })
	}
	for i := range vars {
		if vars[i] != vars[0] {
			t.Fatalf("Publish %d returned a different Var", i)
		}
	}
}

// TestDebugVars scrapes /debug/vars as an operator would.
func TestDebugVars(t *testing.T) {
	e, clk := newEngine(t, engine.Config{Shards: 1})
	v, err := expvarstats.Publish("tide-test-http", e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Set(nil) })
	drive(t, e, clk)
	srv := httptest.NewServer(expvar.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		t.Fatalf("/debug/vars is not JSON: %v", err)
	}
	got := decode(t, string(all["tide-test-http"]))
	if got["hits"] != 2 || got["expired"] != 1 || got["due"] != 1 {
		t.Errorf("/debug/vars tide-test-http = %v", got)
	}
}

// TestSetWhileReading runs String against Set under the race detector.
func TestSetWhileReading(t *testing.T) {
	e, _ := newEngine(t, engine.Config{})
	var v expvarstats.Var
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			v.Set(e)
			v.Set(nil)
		}
	}()
	for range 200 {
		if s := v.String(); s != "null" && !strings.HasPrefix(s, "{") {
			t.Fatalf("String() = %q", s)
		}
	}
	<-done
}

type limiterEvents struct{ allowed, denied atomic.Uint64 }

func (l *limiterEvents) Events() iter.Seq2[string, uint64] {
	return func(yield func(string, uint64) bool) {
		_ = yield("allowed", l.allowed.Load()) && yield("denied", l.denied.Load())
	}
}

func TestEvents(t *testing.T) {
	var l limiterEvents
	v := expvarstats.Events(&l)
	if got, want := v.String(), `{"allowed":0,"denied":0}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	l.allowed.Add(900)
	l.denied.Add(12)
	if got, want := v.String(), `{"allowed":900,"denied":12}`; got != want {
		t.Errorf("String() = %s, want %s (read at each call)", got, want)
	}
	if got := expvarstats.Events(nil).String(); got != "null" {
		t.Errorf("Events(nil) = %s, want null", got)
	}
}
