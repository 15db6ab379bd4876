// Package expvarstats publishes a tide engine's statistics through the
// standard library's expvar package, so that /debug/vars shows them beside
// memstats and cmdline. It registers nothing when imported.
//
//	v, err := expvarstats.Publish("tide", e) // once, at start-up
//	...
//	v.Set(nil) // detach before the engine goes away
//
// The published value is a JSON object read from Engine.Stats at the time
// of each request:
//
//	{"hits": 10, "misses": 2, "writes": 7, "expired": 1, "evicted": 0,
//	 "deleted": 0, "replaced": 3, "entries": 4, "due": 0, "bytes": 312,
//	 "max_bytes": 0, "arena_bytes": 4096, "shards": 64,
//	 "listener_panics": 0}
//
// Counters (hits … replaced, listener_panics) only grow over an engine's
// life; entries, due, bytes, max_bytes, arena_bytes and shards are levels.
// A detached Var reads null.
//
// Events does the same for an adapter's event counters (cache loads,
// rate-limit denials, idempotency replays, session revocations), through
// the EventSource interface that contrib/prometheus also reads.
package expvarstats

import (
	"encoding/json"
	"expvar"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tidekv/tide/engine"
)

// Var is an expvar.Var reporting the Stats of the engine attached to it.
//
// Each String call takes one Engine.Stats snapshot: O(shards + due
// entries), with each shard's lock held shared in turn. The zero value is a
// detached Var, ready to use. A Var is safe for concurrent use.
type Var struct {
	e atomic.Pointer[engine.Engine]
}

// Set attaches e to v, replacing any engine attached before; nil detaches
// (the Var then reads null and no longer keeps an engine reachable).
func (v *Var) Set(e *engine.Engine) { v.e.Store(e) }

// Engine returns the attached engine, or nil.
func (v *Var) Engine() *engine.Engine { return v.e.Load() }

// String returns the attached engine's stats as a JSON object, or null.
func (v *Var) String() string {
	e := v.e.Load()
	if e == nil {
		return "null"
	}
	b, err := json.Marshal(snapshotOf(e.Stats()))
	if err != nil { // cannot happen: the snapshot holds only integers
		return "null"
	}
	return string(b)
}

// snapshot fixes the published field names, independent of Go field names.
type snapshot struct {
	Hits           uint64 `json:"hits"`
	Misses         uint64 `json:"misses"`
	Writes         uint64 `json:"writes"`
	Expired        uint64 `json:"expired"`
	Evicted        uint64 `json:"evicted"`
	Deleted        uint64 `json:"deleted"`
	Replaced       uint64 `json:"replaced"`
	Entries        int    `json:"entries"`
	Due            int    `json:"due"`
	Bytes          int64  `json:"bytes"`
	MaxBytes       int64  `json:"max_bytes"`
	ArenaBytes     int64  `json:"arena_bytes"`
	Shards         int    `json:"shards"`
	CalmShards     int    `json:"calm_shards"`
	ListenerPanics uint64 `json:"listener_panics"`
}

func snapshotOf(s engine.Stats) snapshot {
	return snapshot{
		Hits: s.Hits, Misses: s.Misses, Writes: s.Writes,
		Expired: s.Expired, Evicted: s.Evicted, Deleted: s.Deleted, Replaced: s.Replaced,
		Entries: s.Entries, Due: s.Due, Bytes: s.Bytes, MaxBytes: s.MaxBytes,
		ArenaBytes: s.ArenaBytes, Shards: s.Shards, CalmShards: s.CalmShards, ListenerPanics: s.ListenerPanics,
	}
}

// publishMu serialises Publish's check-then-publish, so that two Publish
// calls for one name cannot both pass the check.
var publishMu sync.Mutex

// Publish attaches e to the Var published in expvar under name and returns
// it, publishing a new Var the first time. expvar cannot unpublish, so a
// name stays taken for the life of the process; Publish reuses it once its
// Var is detached:
//
//	if name is unpublished { publish a new Var under name }
//	if name holds a *Var with no engine, or with e { attach e; return it }
//	return ErrNameTaken
//
// Unlike expvar.Publish it never panics: a name held by another engine or
// by a variable that is not a *Var is an error wrapping ErrNameTaken, and
// an empty name wraps ErrInvalidName. (A concurrent expvar.Publish of the
// same name by other code can still make expvar panic.)
func Publish(name string, e *engine.Engine) (*Var, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidName)
	}
	publishMu.Lock()
	defer publishMu.Unlock()
	switch old := expvar.Get(name).(type) {
	case nil:
		v := new(Var)
		v.Set(e)
		expvar.Publish(name, v)
		return v, nil
	case *Var:
		if cur := old.Engine(); cur != nil && cur != e {
			return nil, fmt.Errorf("%w: %q reports another engine (detach it with Set(nil) first)", ErrNameTaken, name)
		}
		old.Set(e)
		return old, nil
	default:
		return nil, fmt.Errorf("%w: %q holds a %T", ErrNameTaken, name, old)
	}
}
