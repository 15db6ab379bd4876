// Package cas builds optimistic concurrency on top of the engine's
// versions: read-modify-write with retry (Update), and multi-key
// transactions that watch the versions of several keys and commit writes to
// several keys all-or-nothing (Txn, Transact).
//
// Nothing here holds an engine lock while user code runs: a function reads,
// computes, and then the engine checks the versions it read and commits
// atomically, or reports a conflict and the function runs again on fresh
// data. A watched key that expires, is evicted or deleted, or is recreated
// counts as changed (versions are never reused for a key), as Redis WATCH
// does since 7.0.
package cas

import (
	"errors"
	"fmt"
	"time"

	"github.com/tidekv/tide/engine"
)

// DefaultAttempts is the number of attempts Update and Transact make when
// Options.Attempts is 0.
const DefaultAttempts = 64

// Options modify Update and Transact. Transact uses only Attempts (its
// writes say their own TTLs), so its zero Options is valid. Update needs a
// TTL said on purpose: its zero Options is engine.ErrInvalidTTL (see TTL).
type Options struct {
	// Attempts bounds the number of tries; after that the call fails with
	// ErrConflict. 0 means DefaultAttempts. A negative count (retries
	// left, computed after they ran out) is engine.ErrInvalidOptions,
	// reported before fn runs: never DefaultAttempts more tries.
	Attempts int
	// TTL is, for Update, the TTL of a key it creates and, with ResetTTL,
	// of every key it writes; without ResetTTL an existing key keeps its
	// TTL. It must be positive, or engine.NoTTL for none, whatever the
	// key's state: 0 (the zero Options, or a TTL computed from a deadline
	// that has just passed) and other negatives are engine.ErrInvalidTTL,
	// reported before fn runs, with nothing written. So a TTL computed as
	// 0 fails on the first call, never making a key that lives forever,
	// and not only on the day the key happens to be missing. Transact
	// ignores it.
	TTL time.Duration
	// ResetTTL makes Update set TTL on every write instead of keeping the
	// key's remaining TTL.
	ResetTTL bool
}

func (o Options) attempts() (int, error) {
	switch {
	case o.Attempts < 0:
		return 0, fmt.Errorf("%w: cas.Options.Attempts %d (want > 0, or 0 for DefaultAttempts)", engine.ErrInvalidOptions, o.Attempts)
	case o.Attempts == 0:
		return DefaultAttempts, nil
	}
	return o.Attempts, nil
}

// Result is what an Update committed.
type Result struct {
	Value   []byte
	Version uint64
}

// Update atomically replaces key's value with fn(current):
//
//	for attempt := 0; attempt < attempts; attempt++ {
//		old, exists := get(key)
//		next, err := fn(old, exists)
//		if err != nil { return err }
//		if key unchanged since get { set(key, next); return next }
//	}
//	return ErrConflict
//
// fn may run several times and must not have side effects; old is a copy it
// may keep. A missing key is created (only if still missing) with o.TTL;
// an existing one keeps its TTL unless o.ResetTTL. An o.TTL that is not
// positive nor engine.NoTTL is engine.ErrInvalidTTL, and a negative
// o.Attempts engine.ErrInvalidOptions, before fn runs. An error from fn,
// such as ErrAbort, stops Update without writing and is returned.
// Engine errors (ErrTooLarge, ErrOutOfMemory, …) are returned as is.
func Update(e *engine.Engine, key string, fn func(old []byte, exists bool) ([]byte, error), o Options) (Result, error) {
	ttl := o.TTL
	if ttl <= 0 && ttl != engine.NoTTL {
		return Result{}, fmt.Errorf("%w: cas.Options.TTL %v (want > 0, or engine.NoTTL for no expiry)", engine.ErrInvalidTTL, ttl)
	}
	attempts, err := o.attempts()
	if err != nil {
		return Result{}, err
	}
	for range attempts {
		it, exists := e.GetItem(key)
		next, err := fn(it.Value, exists)
		if err != nil {
			return Result{}, err
		}
		var so engine.SetOptions
		switch {
		case !exists:
			so = engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: ttl}
		case o.ResetTTL:
			so = engine.SetOptions{IfVersion: it.Version, TTL: ttl}
		default:
			so = engine.SetOptions{IfVersion: it.Version, KeepTTL: true}
		}
		v, ok, err := e.SetWith(key, next, so)
		if err != nil {
			return Result{}, err
		}
		if ok {
			return Result{Value: next, Version: v}, nil
		}
	}
	return Result{}, ErrConflict
}

// Txn is an optimistic multi-key transaction: it records the version of
// every key it reads or watches, buffers writes, and Commit applies them
// all-or-nothing only if no recorded version changed. A Txn is for one
// goroutine; it is not safe for concurrent use. Its zero value is not
// usable: create one with Begin.
type Txn struct {
	e       *engine.Engine
	watched map[string]uint64
	order   []string
	ops     []engine.Op
	idx     map[string]int
}

// Begin starts a transaction on e.
func Begin(e *engine.Engine) *Txn {
	return &Txn{e: e, watched: map[string]uint64{}, idx: map[string]int{}}
}

func (t *Txn) watch(key string, version uint64) {
	if _, ok := t.watched[key]; !ok {
		t.order = append(t.order, key)
		t.watched[key] = version
	}
}

// Get reads key and watches it: the commit fails if the key changes
// after the transaction first read or watched it (a later Get returns the
// current value but keeps that first version). A key the transaction has
// already written is read from its buffer and not watched: the commit
// overwrites (or deletes) it whatever happened to it meanwhile.
func (t *Txn) Get(key string) ([]byte, bool) {
	if i, ok := t.idx[key]; ok {
		op := t.ops[i]
		if op.Delete {
			return nil, false
		}
		return append([]byte(nil), op.Value...), true
	}
	it, ok := t.e.GetItem(key)
	t.watch(key, it.Version) // 0 if missing: it must stay missing
	return it.Value, ok
}

// Watch records each key's current version without returning the value,
// as Get does: a key already read or watched keeps its first version.
func (t *Txn) Watch(keys ...string) {
	for _, k := range keys {
		if _, ok := t.watched[k]; ok {
			continue
		}
		it, _ := t.e.GetItem(k)
		t.watch(k, it.Version)
	}
}

func (t *Txn) put(op engine.Op) {
	if i, ok := t.idx[op.Key]; ok {
		t.ops[i] = op
		return
	}
	t.idx[op.Key] = len(t.ops)
	t.ops = append(t.ops, op)
}

// Set buffers a write of value to key with no TTL. The value is copied.
func (t *Txn) Set(key string, value []byte) {
	t.put(engine.Op{Key: key, Value: append([]byte{}, value...), TTL: engine.NoTTL})
}

// SetTTL buffers a write of value to key expiring ttl after the commit.
func (t *Txn) SetTTL(key string, value []byte, ttl time.Duration) {
	t.put(engine.Op{Key: key, Value: append([]byte{}, value...), TTL: ttl})
}

// SetKeepTTL buffers a write of value to key that keeps its TTL.
func (t *Txn) SetKeepTTL(key string, value []byte) {
	t.put(engine.Op{Key: key, Value: append([]byte{}, value...), KeepTTL: true})
}

// Delete buffers the removal of key.
func (t *Txn) Delete(key string) { t.put(engine.Op{Key: key, Delete: true}) }

// Commit applies the buffered writes if every watched key still has the
// version it had when first read. It reports false, with nothing changed,
// if one changed (or expired, or was evicted). Errors are the engine's
// (ErrInvalidTTL, ErrOutOfMemory, …); nothing changed then either.
func (t *Txn) Commit() (committed bool, err error) {
	pre := make([]engine.Precondition, 0, len(t.order))
	for _, k := range t.order {
		pre = append(pre, engine.Precondition{Key: k, Version: t.watched[k]})
	}
	_, ok, err := t.e.Commit(pre, t.ops)
	return ok, err
}

// Transact runs fn in a fresh transaction and commits it, retrying on
// conflict up to o.Attempts times (then ErrConflict; a negative
// o.Attempts is engine.ErrInvalidOptions before fn runs). fn may run
// several times and must not have side effects outside the Txn. An error
// from fn stops Transact without committing and is returned.
func Transact(e *engine.Engine, o Options, fn func(*Txn) error) error {
	attempts, err := o.attempts()
	if err != nil {
		return err
	}
	for range attempts {
		t := Begin(e)
		if err := fn(t); err != nil {
			return err
		}
		ok, err := t.Commit()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return ErrConflict
}

// IsConflict reports whether err is ErrConflict.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }
