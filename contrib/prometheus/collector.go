// Package tideprom exports a tide engine's statistics, and the event
// counters of tide's adapters, as Prometheus metrics (a
// prometheus.Collector for client_golang). It lives in its own module so
// that the core does not depend on client_golang; its package name differs
// from the directory so that it imports beside client_golang's prometheus
// without an alias.
//
//	c, err := tideprom.New(tideprom.Config{Engine: e, ConstLabels: prometheus.Labels{"engine": "sessions"}})
//	...
//	reg.MustRegister(c)
//
// # Engine metrics
//
// Each scrape takes one Engine.Stats snapshot (O(shards + due entries)).
// With the default namespace "tide":
//
//	tide_hits_total                 counter  reads that found a live key
//	tide_misses_total               counter  reads that found nothing (due keys included)
//	tide_writes_total               counter  successful writes (sets, counters, swaps)
//	tide_removals_total{cause}      counter  removals by cause: expired, evicted, deleted, replaced
//	tide_listener_panics_total      counter  OnRemove panics recovered in the expiry goroutine
//	tide_entries                    gauge    resident entries, due ones not yet reclaimed included
//	tide_due_entries                gauge    resident entries past their deadline, not yet reclaimed
//	tide_resident_bytes             gauge    accounted bytes of resident entries (key + value + overhead)
//	tide_max_bytes                  gauge    the memory cap (0: none)
//	tide_arena_bytes                gauge    bytes held by the shards' arenas
//	tide_shards                     gauge    number of shards
//	tide_calm_shards                gauge    shards whose policy sees one read in 16
//
// # Adapter metrics
//
// Config.Adapters maps an adapter name to an EventSource; each becomes one
// counter family, <namespace>_<name>_events_total{event}. These are the
// names tide's adapters report under (cache.Cache, ratelimit.Limiter,
// idempotency.Store and session.Manager implement EventSource), and that
// dashboards can be built on:
//
//	adapter       events
//	cache         hit, miss, load, load_error, refresh
//	ratelimit     allowed, denied, store_error
//	idempotency   executed, recovered, in_progress, replayed, mismatch, store_error
//	session       created, revoked, rotated
//
// so that, for example, rate-limit denials are
// tide_ratelimit_events_total{event="denied"}.
package tideprom

import (
	"fmt"
	"iter"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidekv/tide/engine"
)

// An EventSource reports cumulative event counts by event name: each count
// only grows, and each name appears once per call. Any type with this
// method can be exported; it needs no import of this package.
type EventSource interface {
	Events() iter.Seq2[string, uint64]
}

// Config configures a Collector. Engine or Adapters (or both) must be set.
type Config struct {
	// Engine is the engine whose Stats are exported; nil exports none
	// (adapters on Redis have no engine).
	Engine *engine.Engine
	// Adapters maps a name (a Prometheus name fragment: letters, digits,
	// underscores, not starting with a digit) to its event counters.
	Adapters map[string]EventSource
	// Namespace prefixes every metric name; "" means "tide".
	Namespace string
	// ConstLabels are added to every metric. Two Collectors registered in
	// one registry must differ in them (for example {"engine": "cache"}).
	ConstLabels prometheus.Labels
}

// Collector is a prometheus.Collector for one engine and its adapters.
//
// It keeps no state between scrapes: Collect reads the counters at that
// moment. A Collector is safe for concurrent use, and its zero value is not
// usable: create one with New.
type Collector struct {
	e        *engine.Engine
	adapters []adapter

	hits, misses, writes, removals, panics *prometheus.Desc
	entries, due, bytes, maxBytes, arena   *prometheus.Desc
	shards, calm                           *prometheus.Desc
}

type adapter struct {
	src  EventSource
	desc *prometheus.Desc
}

var nameFragment = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// New returns a Collector configured by cfg, or an error wrapping
// ErrInvalidConfig.
func New(cfg Config) (*Collector, error) {
	if cfg.Engine == nil && len(cfg.Adapters) == 0 {
		return nil, fmt.Errorf("%w: neither Engine nor Adapters set", ErrInvalidConfig)
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = "tide"
	}
	if !nameFragment.MatchString(ns) {
		return nil, fmt.Errorf("%w: Namespace %q is not a metric name fragment", ErrInvalidConfig, ns)
	}
	for k := range cfg.ConstLabels {
		if !nameFragment.MatchString(k) || strings.HasPrefix(k, "__") || k == "cause" || k == "event" {
			return nil, fmt.Errorf("%w: ConstLabels key %q", ErrInvalidConfig, k)
		}
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(ns+"_"+name, help, labels, cfg.ConstLabels)
	}
	c := &Collector{e: cfg.Engine}
	if c.e != nil {
		c.hits = desc("hits_total", "Reads that found a live key.")
		c.misses = desc("misses_total", "Reads that found no live key.")
		c.writes = desc("writes_total", "Successful writes (sets, counters, swaps).")
		c.removals = desc("removals_total", "Entries removed or overwritten, by cause (expired, evicted, deleted, replaced).", "cause")
		c.panics = desc("listener_panics_total", "OnRemove listener panics recovered in the expiry goroutine.")
		c.entries = desc("entries", "Resident entries, due ones not yet reclaimed included.")
		c.due = desc("due_entries", "Resident entries past their deadline, not yet reclaimed.")
		c.bytes = desc("resident_bytes", "Accounted bytes of resident entries (key + value + per-entry overhead).")
		c.maxBytes = desc("max_bytes", "The memory cap in accounted bytes (0: no cap).")
		c.arena = desc("arena_bytes", "Bytes held by the shards' key/value arenas.")
		c.shards = desc("shards", "Number of shards.")
		c.calm = desc("calm_shards", "Shards whose eviction policy sees one read in 16 (room to spare under the cap, not filling).")
	}
	for name, src := range cfg.Adapters {
		if !nameFragment.MatchString(name) {
			return nil, fmt.Errorf("%w: Adapters name %q is not a metric name fragment", ErrInvalidConfig, name)
		}
		if src == nil {
			return nil, fmt.Errorf("%w: Adapters[%q] is nil", ErrInvalidConfig, name)
		}
		c.adapters = append(c.adapters, adapter{src, desc(name+"_events_total", "Events of the "+name+" adapter, by event.", "event")})
	}
	return c, nil
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	if c.e != nil {
		for _, d := range []*prometheus.Desc{c.hits, c.misses, c.writes, c.removals, c.panics, c.entries, c.due, c.bytes, c.maxBytes, c.arena, c.shards, c.calm} {
			ch <- d
		}
	}
	for _, a := range c.adapters {
		ch <- a.desc
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.e != nil {
		st := c.e.Stats()
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
		}
		counter(c.hits, st.Hits)
		counter(c.misses, st.Misses)
		counter(c.writes, st.Writes)
		counter(c.removals, st.Expired, engine.CauseExpired.String())
		counter(c.removals, st.Evicted, engine.CauseEvicted.String())
		counter(c.removals, st.Deleted, engine.CauseDeleted.String())
		counter(c.removals, st.Replaced, engine.CauseReplaced.String())
		counter(c.panics, st.ListenerPanics)
		gauge(c.entries, int64(st.Entries))
		gauge(c.due, int64(st.Due))
		gauge(c.bytes, st.Bytes)
		gauge(c.maxBytes, st.MaxBytes)
		gauge(c.arena, st.ArenaBytes)
		gauge(c.shards, int64(st.Shards))
		gauge(c.calm, int64(st.CalmShards))
	}
	for _, a := range c.adapters {
		for event, n := range a.src.Events() {
			ch <- prometheus.MustNewConstMetric(a.desc, prometheus.CounterValue, float64(n), event)
		}
	}
}
