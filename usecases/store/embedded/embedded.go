// Package embedded implements store.Backend on tide's in-process engine.
//
// Primitives map one-to-one onto engine calls (Get → GetItem, Set →
// SetWith, …). Decisions are optimistic: each reads the
// keys it needs, computes the outcome, and writes it with a version-checked
// SetWith, CompareAndDelete or (for decisions that touch two keys) a
// version-checked engine.Commit, retrying from the read if another writer
// got there first. No engine lock is held while the decision computes, and
// a failed attempt changes nothing, so a decision is linearizable at the
// moment its write commits (or, when it writes nothing, at its read).
//
// Time comes from the engine's clock (Engine.Clock), or from the clock
// given in Config, which must then be the same one.
//
// Limits (store's "each backend documents its limits"): a TTL, window,
// lease, retention or token bucket horizon (Capacity × Interval) is
// accepted up to store.MaxTTL and refused beyond it, as on every backend
// (store.ErrInvalidArgument; for a TTL, also store.ErrInvalidTTL; nothing
// changed). Deadlines are int64 nanoseconds since 1970, which end in 2262:
// on a clock past 2162 (a manual one), a duration up to MaxTTL whose
// deadline would end past that is refused the same way.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
)

// Config configures a Backend.
type Config struct {
	// Engine is the engine to use. Required.
	Engine *engine.Engine
	// Clock must be the clock the engine was configured with; nil means
	// the engine's own (Engine.Clock). Decisions read it; giving a
	// different clock makes decisions and TTLs disagree.
	Clock clock.Clock
	// Prefix scopes the Backend: it is prepended to every key, so that
	// Backends with different prefixes on one engine never reach each
	// other's keys (store package doc, "Scopes": a name followed by one
	// ':', "billing:"; store.ValidatePrefix). "" means no scope: the
	// whole engine. The engine's key size limit applies to the prefixed
	// key.
	Prefix string
}

// Backend is store.Backend on an engine. Create it with New; its zero value
// is not usable. It is safe for concurrent use; it
// holds no state of its own, so several Backends on one engine with the
// same Prefix behave as one. Cost: a primitive costs one engine call; a decision costs two to
// four engine calls per attempt, plus one attempt per concurrent writer it
// loses to.
type Backend struct {
	e      *engine.Engine
	clk    clock.Clock
	prefix string
}

var _ store.Backend = (*Backend)(nil)

// New returns a Backend for cfg.Engine, or an error wrapping
// store.ErrInvalidArgument if it is nil or cfg.Prefix is not a valid
// prefix (store.ValidatePrefix).
func New(cfg Config) (*Backend, error) {
	if cfg.Engine == nil {
		return nil, fmt.Errorf("%w: embedded.Config.Engine is nil", store.ErrInvalidArgument)
	}
	if err := store.ValidatePrefix(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("embedded.Config.Prefix: %w", err)
	}
	if cfg.Clock == nil {
		cfg.Clock = cfg.Engine.Clock()
	}
	return &Backend{e: cfg.Engine, clk: cfg.Clock, prefix: cfg.Prefix}, nil
}

// key returns the engine key of the caller's key k: k in the Backend's
// scope.
func (b *Backend) key(k string) string { return b.prefix + k }

// Engine returns the underlying engine.
func (b *Backend) Engine() *engine.Engine { return b.e }

func (b *Backend) now() int64 { return b.clk.Now() }

// Now implements store.Backend.
func (b *Backend) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	if b.e.Closed() {
		return time.Time{}, store.ErrClosed
	}
	return time.Unix(0, b.now()), nil
}

// Get implements store.Backend.
func (b *Backend) Get(ctx context.Context, key string) (store.Item, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Item{}, false, err
	}
	if store.Reserved(key) {
		return store.Item{}, false, b.closed()
	}
	it, ok := b.e.GetItem(b.key(key))
	if !ok {
		if b.e.Closed() {
			return store.Item{}, false, store.ErrClosed
		}
		return store.Item{}, false, nil
	}
	return store.Item{Value: it.Value, Version: it.Version, TTL: it.TTL}, true, nil
}

// Set implements store.Backend.
func (b *Backend) Set(ctx context.Context, key string, value []byte, o store.SetOptions) (uint64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if err := o.Validate(); err != nil {
		return 0, false, err
	}
	if store.Reserved(key) {
		return 0, false, reservedError(key)
	}
	eo := engine.SetOptions{TTL: engineTTL(o.TTL), IfVersion: o.IfVersion, Pin: o.Pin}
	if o.IfAbsent {
		eo.Only = engine.ConditionIfAbsent
	}
	v, ok, err := b.e.SetWith(b.key(key), value, eo)
	return v, ok, fromEngine(err)
}

// reservedError is the error for a write of a reserved key (store.Reserved).
func reservedError(k string) error {
	return fmt.Errorf("%w: key %q begins with %q, reserved for backends' own keys", store.ErrInvalidArgument, k, store.ReservedPrefix)
}

// closed is the error of a call that finds nothing: store.ErrClosed if
// the engine is closed (as for any call), else nil.
func (b *Backend) closed() error {
	if b.e.Closed() {
		return store.ErrClosed
	}
	return nil
}

// engineTTL maps a store TTL to the engine's: store.NoTTL to engine.NoTTL
// (the same rule on both sides of the seam: positive or NoTTL, anything
// else refused); other values pass through, so that one the seam did not
// validate is still refused by the engine, never read as "no TTL".
func engineTTL(ttl time.Duration) time.Duration {
	if ttl == store.NoTTL {
		return engine.NoTTL
	}
	return ttl
}

// CompareAndDelete implements store.Backend.
func (b *Backend) CompareAndDelete(ctx context.Context, key string, version uint64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if version == engine.MustBeAbsent || store.Reserved(key) { // no key has it; DeleteWith would read it as AnyVersion
		return false, b.closed()
	}
	_, ok, err := b.e.DeleteWith(b.key(key), engine.DeleteOptions{IfVersion: version})
	return ok, deleteError(err)
}

// deleteError is fromEngine for a delete: an over-long key cannot exist,
// so deleting one is a miss (false, nil), as Get's is and as Redis's is,
// not ErrKeyTooLarge (store.ErrKeyTooLarge's doc).
func deleteError(err error) error {
	if errors.Is(err, engine.ErrKeyTooLarge) {
		return nil
	}
	return fromEngine(err)
}

// Delete implements store.Backend.
func (b *Backend) Delete(ctx context.Context, key string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if store.Reserved(key) {
		return false, b.closed()
	}
	_, ok, err := b.e.DeleteWith(b.key(key), engine.DeleteOptions{IfVersion: engine.AnyVersion})
	return ok, deleteError(err)
}

// optimistic runs attempt until the decision is made. An attempt reads
// what it needs and computes; it finishes (true) without a write, or with a
// version-checked write it won; it reports a lost race (false, nil), after
// which the next attempt starts again from the read, yielding now and then,
// until ctx is done. No engine lock is held between the read and the write.
//
// A closed engine answers reads with misses, so a decision that finished
// on a closed engine may have decided on keys it could not see (a lease
// reported free, a record absent): it is store.ErrClosed, like every call
// on a closed engine (the store's "may or may not have happened" holds if
// the engine closed just after a write).
func (b *Backend) optimistic(ctx context.Context, attempt func() (bool, error)) error {
	for i := 0; ; i++ {
		done, err := attempt()
		if err == nil && done && b.e.Closed() {
			return store.ErrClosed
		}
		if err != nil || done {
			return err
		}
		if i%8 == 7 {
			runtime.Gosched()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// put writes a new key (IfAbsent) or replaces version v, with ttl (> 0,
// or store.NoTTL) or, for an existing key with keep, keeping its deadline.
func (b *Backend) put(key string, exists bool, version uint64, value []byte, ttl time.Duration, keep bool) (uint64, bool, error) {
	o := engine.SetOptions{TTL: engineTTL(ttl)}
	if exists {
		o.IfVersion = version
		if keep {
			o.TTL, o.KeepTTL = 0, true
		}
	} else {
		o.Only = engine.ConditionIfAbsent
	}
	return b.e.SetWith(key, value, o)
}
