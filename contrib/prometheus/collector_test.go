package tideprom_test

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tidekv/tide/clock"
	tideprom "github.com/tidekv/tide/contrib/prometheus"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/session"
)

func newEngine(t *testing.T, cfg engine.Config) (*engine.Engine, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Unix(1000, 0))
	cfg.Clock, cfg.ExpiryInterval, cfg.Shards = clk, -1, 1
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, clk
}

func newCollector(t *testing.T, cfg tideprom.Config) *tideprom.Collector {
	t.Helper()
	c, err := tideprom.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// drive, on an engine with room for 3 entries of "k?" + 1 byte: 2 hits,
// 2 misses, 8 writes, 1 replaced, 1 deleted, 2 expired, 1 evicted.
func drive(t *testing.T, e *engine.Engine, clk *clock.Manual) {
	t.Helper()
	steps := []func() error{
		func() error { _, err := e.Set("k1", []byte("a")); return err },
		func() error { _, err := e.Set("k1", []byte("b")); return err },
		func() error { _, err := e.SetTTL("k2", []byte("x"), time.Second); return err },
		func() error { _, err := e.SetTTL("k3", []byte("x"), time.Second); return err },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	e.Get("k1")
	e.Get("k1")
	e.Get("zz")
	clk.Advance(time.Second)
	e.Get("k2") // lazily expired: a miss
	e.Delete("k1")
	// k3 is now due but resident. Of four more writes the third needs
	// room and reclaims k3 (expiry, not eviction); the fourth evicts.
	for _, k := range []string{"k4", "k5", "k6", "k7"} {
		if _, err := e.Set(k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCollectorScrape(t *testing.T) {
	const room = 3 * (engine.EntryOverhead + 3)
	e, clk := newEngine(t, engine.Config{MaxBytes: room, Policy: evict.AllKeysLRU})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(t, tideprom.Config{Engine: e, ConstLabels: prometheus.Labels{"engine": "test"}}))
	drive(t, e, clk)

	st := e.Stats()
	if st.Expired != 2 || st.Evicted != 1 || st.Deleted != 1 || st.Replaced != 1 || st.Hits != 2 || st.Misses != 2 || st.Writes != 8 || st.Entries != 3 {
		t.Fatalf("drive produced %+v; the test's arithmetic is off", st)
	}
	want := fmt.Sprintf(`
# HELP tide_hits_total Reads that found a live key.
# TYPE tide_hits_total counter
tide_hits_total{engine="test"} 2
# HELP tide_misses_total Reads that found no live key.
# TYPE tide_misses_total counter
tide_misses_total{engine="test"} 2
# HELP tide_writes_total Successful writes (sets, counters, swaps).
# TYPE tide_writes_total counter
tide_writes_total{engine="test"} 8
# HELP tide_removals_total Entries removed or overwritten, by cause (expired, evicted, deleted, replaced).
# TYPE tide_removals_total counter
tide_removals_total{cause="deleted",engine="test"} 1
tide_removals_total{cause="evicted",engine="test"} 1
tide_removals_total{cause="expired",engine="test"} 2
tide_removals_total{cause="replaced",engine="test"} 1
# HELP tide_listener_panics_total OnRemove listener panics recovered in the expiry goroutine.
# TYPE tide_listener_panics_total counter
tide_listener_panics_total{engine="test"} 0
# HELP tide_entries Resident entries, due ones not yet reclaimed included.
# TYPE tide_entries gauge
tide_entries{engine="test"} 3
# HELP tide_due_entries Resident entries past their deadline, not yet reclaimed.
# TYPE tide_due_entries gauge
tide_due_entries{engine="test"} 0
# HELP tide_resident_bytes Accounted bytes of resident entries (key + value + per-entry overhead).
# TYPE tide_resident_bytes gauge
tide_resident_bytes{engine="test"} %d
# HELP tide_max_bytes The memory cap in accounted bytes (0: no cap).
# TYPE tide_max_bytes gauge
tide_max_bytes{engine="test"} %d
# HELP tide_arena_bytes Bytes held by the shards' key/value arenas.
# TYPE tide_arena_bytes gauge
tide_arena_bytes{engine="test"} %d
# HELP tide_shards Number of shards.
# TYPE tide_shards gauge
tide_shards{engine="test"} 1
# HELP tide_calm_shards Shards whose eviction policy sees one read in 16 (room to spare under the cap, not filling).
# TYPE tide_calm_shards gauge
tide_calm_shards{engine="test"} %d
`, 3*(engine.EntryOverhead+3), room, st.ArenaBytes, st.CalmShards)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestDueGauge: a due key not yet reclaimed shows in due_entries, and the
// expiry cycle moves it to removals_total{cause="expired"}.
func TestDueGauge(t *testing.T) {
	e, clk := newEngine(t, engine.Config{})
	c := newCollector(t, tideprom.Config{Engine: e})
	e.SetTTL("a", []byte("x"), time.Second)
	clk.Advance(time.Second)
	want := func(due, expired float64) {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		if got := metricValue(t, reg, "tide_due_entries", ""); got != due {
			t.Errorf("tide_due_entries = %v, want %v", got, due)
		}
		if got := metricValue(t, reg, "tide_removals_total", "expired"); got != expired {
			t.Errorf("expired = %v, want %v", got, expired)
		}
	}
	want(1, 0)
	e.RunExpiryCycle()
	want(0, 1)
}

// metricValue returns the value of the named metric, selecting by its
// cause label if cause is not empty.
func metricValue(t *testing.T, reg *prometheus.Registry, name, cause string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if cause != "" && !hasLabel(m.GetLabel(), "cause", cause) {
				continue
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			return m.Counter.GetValue()
		}
	}
	t.Fatalf("no metric %s %s", name, cause)
	return 0
}

func hasLabel[L interface {
	GetName() string
	GetValue() string
}](ls []L, k, v string) bool {
	for _, l := range ls {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// events is a fake adapter: the usecases packages will implement
// EventSource on their own types.
type events struct{ denied, allowed atomic.Uint64 }

func (s *events) Events() iter.Seq2[string, uint64] {
	return maps.All(map[string]uint64{"allowed": s.allowed.Load(), "denied": s.denied.Load()})
}

// TestMetricsEndpoint scrapes /metrics over HTTP as Prometheus would, with
// two engines (told apart by a const label) and an adapter in one registry.
func TestMetricsEndpoint(t *testing.T) {
	e1, _ := newEngine(t, engine.Config{})
	e2, _ := newEngine(t, engine.Config{})
	var rl events
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(t, tideprom.Config{Engine: e1, ConstLabels: prometheus.Labels{"engine": "sessions"}}))
	reg.MustRegister(newCollector(t, tideprom.Config{Engine: e2, ConstLabels: prometheus.Labels{"engine": "limits"},
		Adapters: map[string]tideprom.EventSource{"ratelimit": &rl}}))
	if err := reg.Register(newCollector(t, tideprom.Config{Engine: e2, ConstLabels: prometheus.Labels{"engine": "limits"}})); err == nil {
		t.Error("a second collector with the same labels registered")
	}

	e1.Set("s", []byte("x"))
	e1.Get("s")
	e2.Get("nope")
	rl.allowed.Add(3)
	rl.denied.Add(2)

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`tide_hits_total{engine="sessions"} 1`,
		`tide_hits_total{engine="limits"} 0`,
		`tide_misses_total{engine="limits"} 1`,
		`tide_entries{engine="sessions"} 1`,
		`tide_ratelimit_events_total{engine="limits",event="allowed"} 3`,
		`tide_ratelimit_events_total{engine="limits",event="denied"} 2`,
		`# TYPE tide_ratelimit_events_total counter`,
		`# TYPE tide_resident_bytes gauge`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

func TestAdaptersWithoutEngine(t *testing.T) {
	var rl events
	rl.denied.Add(4)
	c := newCollector(t, tideprom.Config{Adapters: map[string]tideprom.EventSource{"ratelimit": &rl}, Namespace: "shop"})
	want := `
# HELP shop_ratelimit_events_total Events of the ratelimit adapter, by event.
# TYPE shop_ratelimit_events_total counter
shop_ratelimit_events_total{event="allowed"} 0
shop_ratelimit_events_total{event="denied"} 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestNewValidates(t *testing.T) {
	e, _ := newEngine(t, engine.Config{})
	tests := []struct {
		name string
		cfg  tideprom.Config
	}{
		{"nothing to export", tideprom.Config{}},
		{"bad namespace", tideprom.Config{Engine: e, Namespace: "my-app"}},
		{"bad label", tideprom.Config{Engine: e, ConstLabels: prometheus.Labels{"1x": "y"}}},
		{"reserved label", tideprom.Config{Engine: e, ConstLabels: prometheus.Labels{"__name__": "y"}}},
		{"label clashes with cause", tideprom.Config{Engine: e, ConstLabels: prometheus.Labels{"cause": "y"}}},
		{"bad adapter name", tideprom.Config{Adapters: map[string]tideprom.EventSource{"rate limit": &events{}}}},
		{"nil adapter", tideprom.Config{Adapters: map[string]tideprom.EventSource{"ratelimit": nil}}},
	}
	for _, tt := range tests {
		if _, err := tideprom.New(tt.cfg); !errors.Is(err, tideprom.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", tt.name, err)
		}
	}
}

// TestScrapeWhileWriting gathers while goroutines write, read and expire
// (run with -race), and checks that counters never go backwards between
// scrapes.
func TestScrapeWhileWriting(t *testing.T) {
	e, clk := newEngine(t, engine.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(t, tideprom.Config{Engine: e}))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprint("k", i%64)
			e.SetTTL(k, []byte("v"), time.Second)
			e.Get(k)
			if i%16 == 0 {
				clk.Advance(time.Second)
				e.RunExpiryCycle()
			}
		}
	}()
	var last float64
	for range 50 {
		hits := metricValue(t, reg, "tide_hits_total", "")
		if hits < last {
			t.Fatalf("tide_hits_total went from %v to %v", last, hits)
		}
		last = hits
	}
	close(stop)
	<-done
}

// The adapters that count events are EventSources as they are.
var (
	_ tideprom.EventSource = (*cache.Cache)(nil)
	_ tideprom.EventSource = (*ratelimit.Limiter)(nil)
	_ tideprom.EventSource = (*idempotency.Store)(nil)
	_ tideprom.EventSource = (*session.Manager)(nil)
)
