// Package evict holds tide's eviction policies: the algorithms that choose
// which live entry leaves when a write needs room under the engine's memory
// cap (engine.Config.MaxBytes).
//
// The engine owns the map, the locks and the byte accounting; a policy only
// sees handles (dense small integers naming resident entries of one shard),
// their sizes and deadlines, read hits and misses, and chooses victims.
// Each shard of an engine has its own Policy instance, built by
// Spec.NewShards (Spec.New for each shard, or instances that share state
// across the shards of one engine, as Adaptive's do).
//
// Concurrency: the engine calls every method of a Policy with the shard's
// write lock held, so a policy instance is never used concurrently and
// needs no synchronization of its own (state shared by the instances of
// several shards has its own lock). Reads do not take that lock: the
// engine logs their hits and misses in its own lossy, striped buffers and
// hands them to the policy in batches under the write lock (BP-Wrapper, as
// Caffeine and otter do), when a buffer fills, periodically as writers take
// the lock, and before every Victim. A policy therefore sees a read's
// Access or Miss after the read, possibly after later writes (a Miss may
// arrive after the Add of the same key), and a few events are lost when
// many readers contend for the same shard. While a shard has room to spare
// and is not filling (calm: more than an eighth of the cap free, and since
// the shard last grew or evicted as many hits as it holds entries), the
// engine hands its policy one read hit in 16, one miss in 16, and, as an
// Update, one in 16 of the overwrites that change neither the entry's size
// nor its deadline; no eviction is near, and a hot key still reaches the
// policy in proportion to its reads (the events are picked by a hash of a
// count, so a periodic pattern of reads loses no key). A logged Access may
// name a handle removed since (a policy ignores an Access to a handle it does not
// track) or removed and reused (it then counts for the new entry).
package evict

// Handle names one resident entry of a shard. The engine assigns handles
// densely from 0 and reuses a handle after Remove, so a policy may keep its
// per-entry metadata in slices indexed by Handle.
type Handle uint32

// Entry is what a policy is told about an evictable entry.
type Entry struct {
	Hash     uint64 // the engine's hash of the key (secretly seeded per engine, so keys cannot be picked to collide)
	Size     int64  // accounted bytes: key + value + per-entry overhead
	Deadline int64  // expiry deadline in engine-clock nanoseconds; 0 = no TTL
}

// Policy is one shard's eviction state. The engine only tells a policy about
// entries it may evict: pinned entries are never added, and for a volatile
// Spec only entries with a TTL are added (an entry that loses its TTL is
// removed, one that gains a TTL is added).
type Policy interface {
	// Add records a newly evictable entry (a write that created it, or an
	// existing entry that became evictable). A write counts as an access.
	// Adding a handle already tracked is an Update.
	Add(h Handle, e Entry)
	// Update records a write to an evictable entry (its size or deadline may
	// have changed). A write counts as an access. Every write that changes
	// the size or deadline is reported; of the others, a calm shard reports
	// one in 16 (see the package doc).
	Update(h Handle, e Entry)
	// Remove forgets h, whatever the cause (deleted, expired, evicted,
	// replaced by an unevictable entry). After Remove, h may be reused.
	Remove(h Handle)
	// Access records a read hit on h, or does nothing if h is not
	// tracked (see the package doc: a logged hit may arrive late).
	Access(h Handle)
	// Miss records a read of an absent key with the given hash (frequency
	// sketches count these).
	Miss(hash uint64)
	// Victim returns the entry to evict next, or false if the policy tracks
	// no entry. It does not remove the entry: the engine evicts it and then
	// calls Remove. now is the engine clock in nanoseconds.
	Victim(now int64) (Handle, bool)
}

// DeadlineSetter is implemented by a policy that orders entries by their
// deadline (TTL). The engine calls SetDeadline, with the shard's write lock
// held, whenever only the deadline of a tracked entry changes (Expire,
// ExpireAt, GetAndExpire, Persist): such a change is not a write and must
// not count as an access, but a deadline-ordered policy must see it. A
// policy that ignores deadlines need not implement it.
type DeadlineSetter interface {
	// SetDeadline records h's new deadline (0 = no TTL).
	SetDeadline(h Handle, deadline int64)
}

// Spec names a policy and builds one instance per shard. The zero Spec is
// NoEviction.
type Spec struct {
	// Name is the policy's name as Redis spells it ("allkeys-lru", ...).
	Name string
	// Volatile reports whether only entries with a TTL may be evicted.
	Volatile bool
	// New builds the policy for one shard whose cap is shardBytes (a hint
	// for sizing sketches and segments; capacity in entries is unknown).
	// New is nil for NoEviction.
	New func(shardBytes int64) Policy

	// newShards, if not nil, builds the policies of an engine's shards
	// together, sharing state (see NewShards).
	newShards func(n int, shardBytes int64) []Policy
}

// NewShards builds the policies of the n shards of one engine, each for a
// shard whose cap is shardBytes: n calls of New, except for a built-in
// policy whose shards share state (Adaptive's share one set of miniature
// caches, which picks the configuration of all of them). Each policy is
// still used by one shard under that shard's lock; the shared state has
// its own. It returns nil if New is nil (NoEviction) or n < 1.
func (s Spec) NewShards(n int, shardBytes int64) []Policy {
	if s.New == nil || n < 1 {
		return nil
	}
	if s.newShards != nil {
		return s.newShards(n, shardBytes)
	}
	ps := make([]Policy, n)
	for i := range ps {
		ps[i] = s.New(shardBytes)
	}
	return ps
}

// NoEviction never evicts: a write that does not fit fails with
// ErrOutOfMemory from the engine. It is the zero Spec.
var NoEviction = Spec{Name: "noeviction"}

// Check verifies the invariants of a policy built by this package — its
// lists, counts, sizes and per-entry records agree, and an Adaptive
// policy's shared miniature caches are consistent — and returns the first
// violation, or nil (always nil for a policy built elsewhere). It is for
// tests: O(entries), and an Adaptive policy's check takes its group's
// mutex. Call it as the policy's other methods are called, under the
// lock of the shard the policy serves.
func Check(p Policy) error {
	if c, ok := p.(interface{ check() error }); ok {
		return c.check()
	}
	return nil
}
