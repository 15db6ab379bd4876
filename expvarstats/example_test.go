package expvarstats_test

import (
	"encoding/json"
	"fmt"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/expvarstats"
)

func Example() {
	e, _ := engine.New(engine.Config{})
	defer e.Close()

	// At start-up: /debug/vars (served by importing expvar on
	// http.DefaultServeMux, or expvar.Handler) now includes "tide".
	v, err := expvarstats.Publish("tide", e)
	if err != nil {
		panic(err)
	}
	defer v.Set(nil) // detach when the engine goes away

	e.Set("k", []byte("v"))
	e.Get("k")
	e.Get("missing")

	var st struct{ Hits, Misses, Entries int }
	json.Unmarshal([]byte(v.String()), &st)
	fmt.Printf("%+v\n", st)
	// Output: {Hits:1 Misses:1 Entries:1}
}
