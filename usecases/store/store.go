// Package store is the seam between tide's use-case adapters (sessions,
// feature flags, rate limits, idempotency, leases) and the store that holds
// their state. The adapters are written against Backend only, so the same
// adapter runs on the embedded engine (package store/embedded) and, later,
// on Redis or Valkey.
//
// # The interface
//
// Backend is a handful of key-value primitives, each one atomic on one key,
// plus one method per decision (Decisions): a small, fixed set of
// multi-step decisions that each run atomically (token bucket, fixed
// window, sliding window, idempotency, lease, flag write with audit). A
// decision is typed data, not a Go closure, so that a remote backend can
// implement each one as a single server-side script, making one round trip
// per decision. The embedded backend
// implements the same decisions with engine compare-and-swap retry loops and
// engine.Commit, never holding an engine lock while running adapter code.
//
// # Time
//
// Time comes from the store's clock, never the caller's: TTLs are relative
// and applied by the store, and decisions read the clock inside the atomic
// step (on Redis: TIME inside the script). Now reports the store's clock for
// adapters that must put a timestamp in a record (a session's creation
// time). Adapters never call time.Now.
//
// # Values and versions
//
// Values are opaque bytes, copied in and out. Every write that changes a
// key's value gives it a new version: a non-zero uint64 that is never
// reused for that key (even after a delete or expiry and re-creation), and
// that does not change when only the key's TTL changes. Versions of
// different keys may be compared only for equality. A due key does not
// exist: it has no version, and a condition on it behaves as for a missing
// key.
//
// # Keys and ownership
//
// Keys are built by the adapters; no key may begin with ReservedPrefix,
// or with a scope's prefix followed by it (Reserved), which every backend
// refuses alike. The part of a key that scopes one
// decision is wrapped in braces by HashTag, as in
// "tide:lease:{orders}:fence", so that every key one decision touches
// hashes to the same Redis Cluster slot whatever the name. The two keys of
// a Lease or a FlagWrite must share a non-empty hash tag (KeyTag): every
// backend refuses other pairs with ErrInvalidArgument, the embedded one
// and a single Redis node included, so that a decision that works on one
// backend works on a Cluster too. Otherwise the embedded backend treats
// braces as ordinary bytes. A key written by a
// decision is owned by that decision kind: only decisions of the same kind
// and Delete may touch it, and its stored encoding is the backend's own
// business; a decision that finds a key written by another kind (or by
// Set) reports ErrCorrupt and changes nothing, never reads it as its own, except the audit log of FlagWrite whose encoding is fixed (see
// AppendLog) because adapters read it with Get.
//
// # Scopes
//
// A backend may be scoped by a key prefix (embedded.Config.Prefix,
// redisstore.Config.Prefix), so that several applications or tenants
// share one engine or one Redis: a scoped backend stores its key k as
// prefix + k. A prefix is a name followed by one ':' ("billing:",
// "tenant-42:"), the name holding no ':' and no '{', and not "tide"
// (ValidatePrefix; a backend refuses any other with ErrInvalidArgument).
// So the first ':' of a stored key ends its scope's prefix, and two
// backends with different prefixes never name the same stored key,
// whatever keys they are given: a key "b:x" in scope "a:" is stored as
// "a:b:x", which no other scope can name, since "a:b:" is refused as a
// prefix (nested scopes would be reachable from their parent; use one
// name, "a-b:"). Every backend answers the same: a scoped backend's
// Get, Set, Delete, CompareAndDelete and decisions reach only keys of its
// scope (a decision's Key, FenceKey and AuditKey alike), and see none of
// another scope's.
//
// A backend without a prefix is not a scope: it addresses the whole
// keyspace, every scope's keys included (but not a scope's own
// bookkeeping, "x:" + ReservedPrefix + …, which Reserved refuses on every
// backend), and scope "x:" reaches its keys that begin with "x:" (never the adapters' default keys: they begin with
// "tide:", which is refused as a prefix). Give every tenant of a shared
// store a prefix, and an unscoped backend only to code trusted with all
// of them.
//
// # TTLs
//
// A key that never expires is something a caller says on purpose, with
// NoTTL; a TTL of 0 (say, one computed from a deadline that has just
// passed, or rounded down) is an error, never "forever". An adapter that
// computes a TTL decides what a result ≤ 0 means for it (delete the key,
// skip the write) before it calls the store. One rule for every duration
// the seam takes:
//
//	TTL argument                         1ns..MaxTTL    NoTTL        0, other < 0, > MaxTTL
//	SetOptions.TTL                       expire after   no TTL       ErrInvalidArgument (and ErrInvalidTTL)
//	Lease.TTL (acquire, renew)           expire after   invalid      ErrInvalidArgument
//	Idempotency.Lease, Retention (claim) expire after   invalid      ErrInvalidArgument
//	FixedWindow, SlidingWindow.Window    window         invalid      ErrInvalidArgument
//	TokenBucket.Interval                 refill step    invalid      ErrInvalidArgument
//	TokenBucket.Capacity × Interval      horizon        -            ErrInvalidArgument if > MaxTTL
//
// A refused call changes nothing. The bounds are the same on every backend
// (the methods' Validate checks them): MaxTTL is accepted, MaxTTL+1ns is
// not, on the embedded engine and on Redis alike. The smallest TTL, 1 ns,
// is a TTL: a backend with a coarser granularity rounds it up (Redis: to
// 1 ms), never down to 0.
//
// # Pinning and eviction
//
// SetOptions.Pin exempts a key from eviction on the embedded engine. A Redis backend cannot pin keys; it must document that
// it requires maxmemory-policy noeviction, or a volatile-* policy, under
// which the keys that matter most (fence counters, flags, audit logs) are
// safe because they have no TTL, while pinned keys with a TTL (leases,
// sessions with session.Config.Pin) may still be evicted, with the
// consequences each adapter documents.
//
// # Errors
//
// Misses and lost races are reported with bools, not errors. An error means
// the request was invalid (ErrInvalidArgument, ErrInvalidTTL, …) or the
// store failed (ErrUnavailable, ErrClosed, ErrOutOfMemory, or a transport
// error); in the second case the operation may or may not have happened,
// and adapters treat it per their documented failure policy. A backend must
// not retry a write on its own once it may have reached the store (a
// retried decision would apply twice: a token charged twice, a claim
// answered "in progress" to its own owner); it reports ErrUnavailable and
// lets the adapter's policy decide.
//
// # Conformance
//
// Package store/storetest holds the conformance suite every Backend must
// pass (storetest.Run), and the adapters' contract suites, which run
// against any Backend (storetest.RunUseCases).
package store

import (
	"context"
	"fmt"
	"time"
)

// NoTTL says "no expiry": the TTL reported for a key without one
// (Item.TTL), and the TTL a write gives to make a key that never expires
// (SetOptions.TTL). It equals engine.NoTTL. See "TTLs" for the rule.
const NoTTL time.Duration = -1

// MaxTTL is the longest duration the seam takes: 100 years (the engine's
// deadlines are int64 nanoseconds since 1970 and end in 2262). Every
// backend accepts every TTL, window, interval and token bucket horizon up
// to it, and refuses every longer one with ErrInvalidArgument (see "TTLs"),
// whatever its clock or its arithmetic, so that a call has one answer on
// every backend. Adapters refuse, at construction, durations that would
// need a longer one.
const MaxTTL = 100 * 365 * 24 * time.Hour

// Item is a value with its metadata, as returned by Backend.Get.
type Item struct {
	Value   []byte
	Version uint64
	// TTL is the time left before the key expires, or NoTTL.
	TTL time.Duration
}

// SetOptions modify Backend.Set. The zero value is not a valid write: its
// TTL of 0 is refused (see "TTLs"), so that a TTL computed as 0 never makes
// a key that lives forever. The adapters use three shapes:
//
//   - set:                 {TTL: d} or {TTL: NoTTL}
//   - set-if-absent:       {IfAbsent: true, TTL: d}
//   - compare-and-swap:    {IfVersion: v, TTL: d}
//
// A write always sets the key's TTL: to TTL if positive, to none if NoTTL.
type SetOptions struct {
	// TTL, if positive, makes the key expire TTL from now (store time);
	// NoTTL makes it never expire. 0, every other negative and anything
	// over MaxTTL are ErrInvalidArgument (also matching ErrInvalidTTL),
	// with nothing written.
	TTL time.Duration
	// IfAbsent makes the write happen only if the key does not exist.
	IfAbsent bool
	// IfVersion, if non-zero, makes the write a compare-and-swap: it
	// happens only if the key exists with exactly this version. With
	// IfAbsent it is ErrInvalidOptions.
	IfVersion uint64
	// Pin exempts the key from eviction (sticky across later writes).
	Pin bool
}

// Validate reports options Set must refuse, changing nothing: a TTL that
// is neither in 1ns..MaxTTL nor NoTTL (an error wrapping both
// ErrInvalidArgument and ErrInvalidTTL), or IfAbsent with IfVersion
// (ErrInvalidOptions). A backend's Set starts with it.
func (o SetOptions) Validate() error {
	if (o.TTL <= 0 || o.TTL > MaxTTL) && o.TTL != NoTTL {
		return fmt.Errorf("%w: %w: %v (want 0 < TTL ≤ %v, or NoTTL for no expiry)", ErrInvalidArgument, ErrInvalidTTL, o.TTL, MaxTTL)
	}
	if o.IfAbsent && o.IfVersion != 0 {
		return fmt.Errorf("%w: IfAbsent with IfVersion %d", ErrInvalidOptions, o.IfVersion)
	}
	return nil
}

// Primitives are the key-value operations of a Backend. Every method is
// atomic and linearizable on its key(s) and safe for concurrent use. Methods take a context first because they may reach a remote store;
// a backend honours cancellation where it can (the embedded one checks it
// on entry only, since it never blocks on I/O).
type Primitives interface {
	// Now returns the store's current time. Adapters use it only to stamp
	// records; expiry decisions are made inside the store.
	Now(ctx context.Context) (time.Time, error)

	// Get returns key's value, version and remaining TTL; ok is false if the
	// key is missing or due.
	Get(ctx context.Context, key string) (it Item, ok bool, err error)

	// Set writes value under key as modified by o and returns the new
	// version. Options o.Validate refuses are an error, with nothing
	// changed. ok is false if o's condition (IfAbsent, IfVersion) did not hold;
	// then nothing changed. Set-if-absent and compare-and-swap are Set with
	// IfAbsent and with IfVersion.
	Set(ctx context.Context, key string, value []byte, o SetOptions) (version uint64, ok bool, err error)

	// CompareAndDelete deletes key if its current version is version, and
	// reports whether it did. A version of 0 never matches.
	CompareAndDelete(ctx context.Context, key string, version uint64) (deleted bool, err error)

	// Delete deletes key and reports whether it existed.
	Delete(ctx context.Context, key string) (deleted bool, err error)
}

// Backend is everything the use-case adapters need of a store: the
// primitives and every decision. Each adapter takes the small part it uses
// (ratelimit.Backend, cache.Backend, …); a backend implements all of it, so
// that a missing method is a compile error where the backend is declared
// (var _ store.Backend = (*B)(nil)).
type Backend interface {
	Primitives
	Decisions
}

// Decisions are the atomic multi-step decisions of the adapters, one
// method per kind, each running its decision atomically: it reads d's
// parameters, applies the decision at the store's current time, and fills
// d's result fields. Invalid parameters are ErrInvalidArgument with nothing
// changed (a backend starts each method with Begin). Every kind is a method
// so that a backend missing one does not compile.
type Decisions interface {
	TokenBucket(ctx context.Context, d *TokenBucket) error
	FixedWindow(ctx context.Context, d *FixedWindow) error
	SlidingWindow(ctx context.Context, d *SlidingWindow) error
	Idempotency(ctx context.Context, d *Idempotency) error
	Lease(ctx context.Context, d *Lease) error
	FlagWrite(ctx context.Context, d *FlagWrite) error
}

// Begin is the first step of every decision method of a backend: it
// returns ctx's error if ctx is done, then d's if its parameters are
// invalid or d is nil (an error wrapping ErrInvalidArgument).
func Begin[D any, P interface {
	*D
	Validate() error
}](ctx context.Context, d P) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("%w: nil %T", ErrInvalidArgument, d)
	}
	return d.Validate()
}
