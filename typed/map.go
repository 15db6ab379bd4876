// Package typed stores Go values, not bytes, in a tide engine: a Map[V]
// encodes each value with a Codec on the way in and decodes it on the way
// out, and keeps everything else the engine offers — TTLs, versions,
// compare-and-swap, update with retry.
//
//	users, _ := typed.New[User](e, typed.Config[User]{Prefix: "user:"})
//	users.SetTTL("42", User{Name: "Ada"}, time.Hour)
//	u, ok, err := users.Get("42")
//
// # Codecs
//
// Config.Codec chooses the encoding. Without one a Map stores a string or
// a []byte as is, a type whose pointer has MarshalBinary and UnmarshalBinary
// through those methods (Binary), and any other type as JSON (JSON). A
// struct that embeds such a type (time.Time, say) has its methods by
// promotion, so it is stored as the embedded field alone, its other fields
// dropped (encoding/json does the same with a promoted MarshalJSON): give
// it a Codec. A value the codec cannot decode is an error wrapping
// ErrDecode, never a miss, and is left in place.
//
// # Keys
//
// Config.Prefix is prepended to every key, so that maps of different value
// types can share an engine without reading each other's values, as long
// as no Map's prefix begins with another Map's prefix: the engine key is
// the two joined, so Prefix "user" with key ":1" is Prefix "user:" with
// key "1", and a Map without a prefix sees every key. The engine sees (and
// limits) the prefixed key.
//
// # Cost
//
// A Map adds its codec's cost to the engine's: Get copies the stored
// bytes into a pooled buffer and decodes from it (no allocation for them;
// GetItem, GetAndExpire, GetAndDelete and Update decode a fresh copy), Set
// encodes into a pooled buffer that the engine copies (a codec that returns
// its own slice, as JSON's does, costs that slice). A Prefix costs one key
// allocation per call. The package benchmarks measure the difference from
// the byte API.
package typed

import (
	"fmt"
	"sync"
	"time"

	"github.com/tidekv/tide/cas"
	"github.com/tidekv/tide/engine"
)

// Config configures a Map. The zero value is a Map without key prefix
// using the default codec for V.
type Config[V any] struct {
	// Prefix is prepended to every key the Map reads or writes.
	Prefix string
	// Codec encodes and decodes values; nil chooses by V's type (see the
	// package documentation).
	Codec Codec[V]
}

// Item is a value with its metadata.
type Item[V any] struct {
	Value   V
	Version uint64
	// TTL is the time left before the key expires, or engine.NoTTL.
	TTL time.Duration
}

// Map is a view of an engine that stores values of type V under keys.
//
// Every method is one engine operation (GetAndDelete and Update may retry
// several), linearizable per key as the engine's are; between the engine
// and the caller it only encodes or decodes. A Map is safe for concurrent
// use. Its zero value is not usable: create one with New. Several Maps may
// share an engine.
type Map[V any] struct {
	e      *engine.Engine
	prefix string
	codec  Codec[V]
}

// New returns a Map over e, or an error wrapping ErrInvalidConfig.
func New[V any](e *engine.Engine, cfg Config[V]) (*Map[V], error) {
	if e == nil {
		return nil, fmt.Errorf("%w: nil engine", ErrInvalidConfig)
	}
	c := cfg.Codec
	if c == nil {
		c = defaultCodec[V]()
	}
	return &Map[V]{e: e, prefix: cfg.Prefix, codec: c}, nil
}

func (m *Map[V]) key(k string) string {
	if m.prefix == "" {
		return k
	}
	return m.prefix + k
}

// bufs holds encode and read buffers. Buffers that grew past maxPooled are
// dropped rather than kept alive by the pool.
var bufs = sync.Pool{New: func() any {
	b := make([]byte, 0, minPooled)
	return &b
}}

const (
	minPooled = 256
	maxPooled = 64 << 10
)

func getBuf() *[]byte { return bufs.Get().(*[]byte) }

// putBuf returns *p to the pool, replaced by b if b is the engine's
// AppendGet result: memory that only the Map references.
func putBuf(p *[]byte, b []byte) {
	if cap(b) > maxPooled {
		return
	}
	*p = b[:0]
	bufs.Put(p)
}

// putEncoded returns *p to the pool after an Encode into it that returned
// b. b replaces *p only if it is *p's memory (extended in place): a Codec
// may return a slice it does not own, such as the value itself, which the
// pool must never hand out.
func putEncoded(p *[]byte, b []byte) {
	if cap(b) > 0 && cap(*p) > 0 && &b[:1][0] == &(*p)[:1][0] {
		putBuf(p, b)
		return
	}
	putBuf(p, *p)
}

func (m *Map[V]) decode(key string, src []byte) (V, error) {
	v, err := m.codec.Decode(src)
	if err != nil {
		var zero V
		return zero, fmt.Errorf("%w: key %q: %w", ErrDecode, key, err)
	}
	return v, nil
}

func (m *Map[V]) encode(dst []byte, key string, v V) ([]byte, error) {
	b, err := m.codec.Encode(dst, v)
	if err != nil {
		return b, fmt.Errorf("%w: key %q: %w", ErrEncode, key, err)
	}
	return b, nil
}

// Get returns the value stored under key. ok is false if the key does not
// exist; err wraps ErrDecode if it exists but does not decode.
func (m *Map[V]) Get(key string) (v V, ok bool, err error) {
	p := getBuf()
	b, ok := m.e.AppendGet(*p, m.key(key))
	if ok {
		v, err = m.decode(key, b)
	}
	putBuf(p, b)
	return v, ok, err
}

// GetItem is Get with the value's version and TTL.
func (m *Map[V]) GetItem(key string) (Item[V], bool, error) {
	it, ok := m.e.GetItem(m.key(key))
	if !ok {
		return Item[V]{}, false, nil
	}
	v, err := m.decode(key, it.Value)
	if err != nil {
		return Item[V]{}, true, err
	}
	return Item[V]{Value: v, Version: it.Version, TTL: it.TTL}, true, nil
}

// Set stores v under key with no TTL (clearing any TTL the key had) and
// returns the new version.
func (m *Map[V]) Set(key string, v V) (version uint64, err error) {
	version, _, err = m.SetWith(key, v, engine.SetOptions{TTL: engine.NoTTL})
	return version, err
}

// SetTTL stores v under key, expiring ttl from now. A ttl ≤ 0 is
// engine.ErrInvalidTTL.
func (m *Map[V]) SetTTL(key string, v V, ttl time.Duration) (version uint64, err error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: %v (must be positive)", engine.ErrInvalidTTL, ttl)
	}
	version, _, err = m.SetWith(key, v, engine.SetOptions{TTL: ttl})
	return version, err
}

// SetWith stores v under key as o modifies the write (set-if-absent,
// version condition, TTL on create, keep TTL, pin), with the engine's
// results: the new version and true, or false if o's condition did not
// hold. An encoding failure wraps ErrEncode; other errors are the engine's.
// On error nothing changed.
func (m *Map[V]) SetWith(key string, v V, o engine.SetOptions) (version uint64, ok bool, err error) {
	p := getBuf()
	b, err := m.encode(*p, key, v)
	if err == nil {
		version, ok, err = m.e.SetWith(m.key(key), b, o)
	}
	putEncoded(p, b)
	return version, ok, err
}

// CompareAndSwap stores v under key if the key's current version is old,
// keeping its TTL, and returns the new version:
//
//	if exists(key) && version(key) == old {
//		value(key), version(key) = v, next()
//		return version(key), true, nil
//	}
//	return 0, false, nil
//
// A missing key never matches.
func (m *Map[V]) CompareAndSwap(key string, old uint64, v V) (version uint64, swapped bool, err error) {
	p := getBuf()
	b, err := m.encode(*p, key, v)
	if err == nil {
		version, swapped, err = m.e.CompareAndSwap(m.key(key), old, b)
	}
	putEncoded(p, b)
	return version, swapped, err
}

// Update atomically replaces key's value with fn(old), retrying when the key
// changes between the read and the write (see cas.Update, whose Options it
// takes: attempts, TTL on create or on every write; o.TTL must be positive
// or engine.NoTTL, else engine.ErrInvalidTTL before fn runs; a negative
// o.Attempts is engine.ErrInvalidOptions):
//
//	for attempt := 0; attempt < attempts; attempt++ {
//		old, exists := get(key)
//		next, err := fn(old, exists)
//		if err != nil { return err }
//		if key unchanged since get { set(key, next); return next }
//	}
//	return cas.ErrConflict
//
// fn may run several times and must not have side effects; exists is false
// (and old the zero V) for a missing key, which Update creates. An error
// from fn (cas.ErrAbort, say) stops Update without writing and is returned
// as is; a stored value that does not decode stops it with an error
// wrapping ErrDecode, leaving the value in place. It returns the value and
// version it wrote.
func (m *Map[V]) Update(key string, fn func(old V, exists bool) (V, error), o cas.Options) (V, uint64, error) {
	var next V
	res, err := cas.Update(m.e, m.key(key), func(raw []byte, exists bool) ([]byte, error) {
		var old V
		if exists {
			v, err := m.decode(key, raw)
			if err != nil {
				return nil, err
			}
			old = v
		}
		n, err := fn(old, exists)
		if err != nil {
			return nil, err
		}
		next = n
		return m.encode(nil, key, n)
	}, o)
	if err != nil {
		var zero V
		return zero, 0, err
	}
	return next, res.Version, nil
}

// GetAndExpire returns key's item and sets it to expire ttl from now, in
// one step (a sliding TTL). A ttl ≤ 0 is engine.ErrInvalidTTL. A value
// that does not decode still has its TTL set (the engine did that before
// the Map saw the bytes); the error wraps ErrDecode.
func (m *Map[V]) GetAndExpire(key string, ttl time.Duration) (Item[V], bool, error) {
	it, ok, err := m.e.GetAndExpire(m.key(key), ttl)
	if err != nil || !ok {
		return Item[V]{}, false, err
	}
	v, err := m.decode(key, it.Value)
	if err != nil {
		return Item[V]{}, true, err
	}
	return Item[V]{Value: v, Version: it.Version, TTL: it.TTL}, true, nil
}

// TTL reports the time left before key expires: ok is false if the key
// does not exist; ttl is engine.NoTTL if it exists without expiry. It does
// not decode the value.
func (m *Map[V]) TTL(key string) (ttl time.Duration, ok bool) {
	return m.e.TTL(m.key(key))
}

// Expire sets key to expire ttl from now if cond holds, and reports
// whether it did, as engine.Engine.Expire does (a ttl ≤ 0 is
// engine.ErrInvalidTTL). The value and its version are unchanged.
func (m *Map[V]) Expire(key string, ttl time.Duration, cond engine.ExpireCondition) (bool, error) {
	return m.e.Expire(m.key(key), ttl, cond)
}

// Persist removes key's TTL and reports whether it had one, as
// engine.Engine.Persist does.
func (m *Map[V]) Persist(key string) (bool, error) {
	return m.e.Persist(m.key(key))
}

// Delete removes key and reports whether it existed. As
// engine.Engine.Delete, with a durability log a delete whose record cannot
// be logged returns false and leaves the key.
func (m *Map[V]) Delete(key string) (deleted bool) {
	return m.e.Delete(m.key(key))
}

// CompareAndDelete removes key if its current version is version, and
// reports whether it did (false, with the key left, also for a delete whose
// log record cannot be written, as engine.Engine.CompareAndDelete).
func (m *Map[V]) CompareAndDelete(key string, version uint64) (deleted bool) {
	return m.e.CompareAndDelete(m.key(key), version)
}

// GetAndDelete removes key and returns the value it had; a miss returns
// the zero V. A value that does not decode is not removed: the error
// wraps ErrDecode and loaded is true. It reads, decodes and then deletes
// by version, retrying if the key changed in between, so the value
// returned is exactly the one removed; after cas.DefaultAttempts lost
// races it gives up with cas.ErrConflict.
// A delete the engine refuses (its log record could not be written:
// engine.ErrLogWrite or ErrLogFailed; or ErrClosed, the engine closed in
// between) returns the engine's error, with the key unchanged.
func (m *Map[V]) GetAndDelete(key string) (v V, loaded bool, err error) {
	k := m.key(key)
	var zero V
	for range cas.DefaultAttempts {
		it, ok := m.e.GetItem(k)
		if !ok {
			// Not v: a value read on an earlier attempt was removed by
			// someone else, who returned it.
			return zero, false, nil
		}
		v, err := m.decode(key, it.Value)
		if err != nil {
			return zero, true, err
		}
		// DeleteWith, not CompareAndDelete: a delete the engine refuses
		// (its log record could not be written) is an error to report,
		// not a lost race to retry and then blame on contention.
		_, deleted, err := m.e.DeleteWith(k, engine.DeleteOptions{IfVersion: it.Version})
		if err != nil {
			return zero, false, err
		}
		if deleted {
			return v, true, nil
		}
	}
	return zero, false, cas.ErrConflict
}
