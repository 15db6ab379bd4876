package expvarstats

import (
	"expvar"
	"iter"
)

// An EventSource reports cumulative event counts by event name; each count
// only grows. cache.Cache, ratelimit.Limiter, idempotency.Store and
// session.Manager implement it (the event names are listed in
// contrib/prometheus, for example "denied" for a rate limiter); any type
// with this method works, without importing this package.
type EventSource interface {
	Events() iter.Seq2[string, uint64]
}

// Events returns an expvar.Var reporting src's counts, read at each
// request, as a JSON object such as {"allowed": 900, "denied": 12}. A
// name reported twice keeps its last count; a nil src reads null. Publish
// it with expvar.Publish (which panics on a name already taken).
func Events(src EventSource) expvar.Var {
	return expvar.Func(func() any {
		if src == nil {
			return nil
		}
		m := map[string]uint64{}
		for name, n := range src.Events() {
			m[name] = n
		}
		return m
	})
}
