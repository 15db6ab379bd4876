package tideprom_test

import (
	"bufio"
	"encoding/json"
	"expvar"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	tideprom "github.com/tidekv/tide/contrib/prometheus"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/expvarstats"
)

// Example wires one engine into both /debug/vars (expvar, standard library
// only) and /metrics (Prometheus).
func Example() {
	e, err := engine.New(engine.Config{})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	// expvar: the engine's stats under "tide-example" in /debug/vars.
	v, err := expvarstats.Publish("tide-example", e)
	if err != nil {
		panic(err)
	}
	defer v.Set(nil)

	// Prometheus: a collector in the registry /metrics serves.
	reg := prometheus.NewRegistry()
	c, err := tideprom.New(tideprom.Config{Engine: e, ConstLabels: prometheus.Labels{"engine": "main"}})
	if err != nil {
		panic(err)
	}
	reg.MustRegister(c)

	mux := http.NewServeMux()
	mux.Handle("GET /debug/vars", expvar.Handler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	e.Set("greeting", []byte("hello"))
	e.Get("greeting")
	e.Get("missing")

	resp, _ := http.Get(srv.URL + "/metrics")
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "tide_hits") || strings.HasPrefix(l, "tide_misses") || strings.HasPrefix(l, "tide_entries") {
			fmt.Println(l)
		}
	}
	resp.Body.Close()

	resp, _ = http.Get(srv.URL + "/debug/vars")
	var vars map[string]json.RawMessage
	json.NewDecoder(resp.Body).Decode(&vars)
	resp.Body.Close()
	fmt.Println(string(vars["tide-example"])[:20])
	// Output:
	// tide_entries{engine="main"} 1
	// tide_hits_total{engine="main"} 1
	// tide_misses_total{engine="main"} 1
	// {"hits":1,"misses":1
}
