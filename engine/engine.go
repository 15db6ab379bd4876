// Package engine is tide's embedded key-value engine: a sharded hash map of
// versioned byte values with exact TTLs, atomic counters, conditional and
// compare-and-swap writes, a memory cap with pluggable eviction, and removal
// notifications that tell expiry from eviction.
//
// # Model
//
// Keys are strings (any bytes, the empty string included) up to
// Config.MaxKeySize. Values are []byte, copied on write; reads return copies
// (or append into a caller's buffer), never memory the engine will change;
// View lends the stored bytes to a callback, unchanged while it runs.
//
// Every successful write that changes a key's value assigns it a new
// version: a uint64 from a per-shard counter that only increases, so a
// version is never reused for a key, even after the key was deleted,
// expired or evicted and then created again. Changing only a key's TTL
// (Expire, Persist, GetAndExpire) or its pinning does not change its
// version. Versions of different keys may be compared only for equality.
//
// A key written with TTL d at time t is visible while now < t+d and gone
// from t+d on. A plain write clears the TTL; SetOptions.KeepTTL keeps it;
// counters keep it; SetOptions.TTLOnCreate and IncrOptions.TTL set it only
// when the write creates the key.
//
// # Contract
//
// One rule per axis, followed by every call:
//
//	Axis              Rule
//	version           0 is no key's version. As SetOptions.IfVersion it is AnyVersion: no
//	                  condition. As Precondition.Version it is MustBeAbsent: the key must
//	                  not exist (an absent key's version is 0). As the version argument
//	                  of CompareAndSwap or CompareAndDelete it matches no key: false, nil.
//	                  A miss reports version 0.
//	TTL               NoTTL says "no expiry"; 0 and other negatives are ErrInvalidTTL
//	                  (never "forever"; details in the table below).
//	key length        a key longer than Config.MaxKeySize is ErrKeyTooLarge on every call
//	                  that returns an error (Set*, CompareAndSwap, counters, Commit,
//	                  Expire, ExpireAt, GetAndExpire, Persist, Pin, DeleteWith); a call
//	                  without an error result (Get, AppendGet, GetItem, TTL, Delete,
//	                  CompareAndDelete, GetAndDelete) reports a miss: no such key can
//	                  exist.
//	closed engine     ErrClosed on every call that returns an error. Calls without an error
//	                  result report a miss or false, All and Items yield nothing,
//	                  RunExpiryCycle removes nothing, Len and Stats count no entries, and
//	                  Close returns nil. Closed tells a miss from a closed engine.
//	pinning           Pin in SetOptions, Op and IncrOptions pins the key the write leaves;
//	                  a write without Pin leaves pinning as it was; Engine.Pin sets or
//	                  clears it; it goes with the key when the key is removed.
//	error order       first an invalid argument (ErrKeyTooLarge, ErrInvalidTTL,
//	                  ErrInvalidOptions; DecrBy's delta of MinInt64 is ErrOverflow),
//	                  then ErrClosed, then a failed condition
//	                  (false, nil), then what is decided under the lock: a TTL that
//	                  overflows the clock (ErrInvalidTTL), ErrTooLarge, ErrOutOfMemory.
//
// A key that never expires is something a caller says on purpose, with
// NoTTL; a TTL of 0 (say, one computed from a deadline that has just
// passed, or rounded down) is an error, never "forever". The TTL rule for
// every duration the engine takes:
//
//	TTL argument                    > 0              NoTTL              0                  other < 0
//	SetOptions.TTL, Op.TTL          expire after     no TTL             ErrInvalidTTL      ErrInvalidTTL
//	  with KeepTTL, no TTLOnCreate  ErrInvalidOptions ErrInvalidOptions keeps the TTL      ErrInvalidOptions
//	  with TTLOnCreate              on create        none on create     ErrInvalidTTL      ErrInvalidTTL
//	IncrOptions.TTL (on create)     expire after     no TTL             ErrInvalidTTL      ErrInvalidTTL
//	SetTTL, Expire, GetAndExpire    expire after     ErrInvalidTTL      ErrInvalidTTL      ErrInvalidTTL
//
// Set, Incr, IncrBy, Decr and DecrBy take no TTL (Set clears it, counters
// keep it); Persist removes one; ExpireAt takes an absolute deadline (one
// already due deletes the key); a TTL that overflows the clock is
// ErrInvalidTTL. Op.TTL is ignored for a Delete.
//
// # Expiry and eviction
//
// A due entry is never returned. Any access to a due entry removes it (lazy
// expiry); a background cycle removes due entries in deadline order from a
// B-tree index, a bounded batch at a time (active expiry; see package
// expiry). Eviction is different: under Config.MaxBytes, a write that needs
// room first reclaims due entries, then evicts live ones chosen by
// Config.Policy. Every removal has exactly one Cause. A policy learns of
// every write and read, except in a calm shard: one with room to spare
// (more than an eighth of MaxBytes free) that is not filling, whose policy
// sees one read in 16 and one in 16 of the overwrites that keep an entry's
// size and deadline, so that a cache with room pays a sixteenth of the
// policy's cost per read (see readlog.go; Stats.CalmShards counts them).
//
// # Concurrency
//
// An Engine is safe for concurrent use. Every operation on a key is
// linearizable. Get, AppendGet and View of a key without a TTL (and of a
// missing key) take no lock and write no memory shared by the shard's
// readers: an optimistic read validated by the shard's sequence count (a
// seqlock; see shardMu and shard.probe), retried under the lock when a
// writer ran meanwhile. Reads of a key with a TTL, and the other reads, take the
// shard's lock in shared mode and read the clock under it. View's callback
// runs with no lock held.
package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
)

// Engine is the key-value engine. Create it with New; its zero value is not
// usable. See the package documentation for the semantics.
//
// Algorithm: a hash of the key with a secret per-engine seed (the
// runtime's memhash, keyed as Go's maps and hash/maphash key it, see
// keySeed: keys picked offline cannot be made to collide, no hash flooding)
// picks one of Config.Shards shards by its low bits, and the shard's table
// word by its high bits; each shard
// is an RWMutex over pointer-free storage (a slot array, a key/value arena
// and an open-addressing table; see record.go) plus a B-tree of deadlines and
// an eviction policy instance.
//
// Cost: a read hashes the key, probes the table (2–3 words on average,
// most often in one cache line: 2.6 at 1M keys, where the load is 0.76),
// compares the key and copies the value (View: no copy), without a lock for
// a key without TTL (it reads the shard's sequence count twice and writes
// its P's stripe of the hit counters and, with a policy, of the
// shard's read log: every hit, or one in 16 while the shard is calm, with
// room to spare and not filling, see readlog.go; a read that finds a
// writer at work waits for it and tries again, up to 4 times, or takes
// the lock at once if the writer outlasts one wait) and under
// the shard lock shared otherwise, reading the clock only if the key has
// a TTL: O(1), no allocation with AppendGet or
// View. A read makes two dependent memory accesses on a hit: table word,
// record (the table word names the record's offset).
// A write takes the shard lock exclusively (every 8th time, and before
// every eviction, first handing the reads logged meanwhile to the policy,
// at most 84 events; optimistic readers wait only for the part of a write
// that changes storage, not for its policy work): O(1) plus O(log n) in the
// expiry index when the key gets a TTL it did not have or an earlier one,
// plus the eviction policy's cost when the engine is at its cap (see
// budget: MaxBytes is one engine-wide budget, a write makes room in its own
// shard first and then in others, one lock at a time). Arena
// rebuilds copy a shard's live bytes, amortized O(1) per written byte.
//
// Concurrency: every method is safe for concurrent use; operations on one
// key are linearizable. Commit locks the shards it touches in ascending
// order. Close waits for the expiry goroutine unless it is running a
// listener (see Close).
type Engine struct {
	shards   []shard
	b        *budget // Config.MaxBytes; nil = no cap
	mask     uint64
	seed     keySeed // secret: the key hash of every shard and table
	clock    clock.Clock
	mono     bool // clock is known to be monotonic: no guard needed
	maxKey   int
	onRemove func(Removal)
	closed   atomic.Bool
	dur      *durable // Config.Durability; nil = no log

	listenerPanics atomic.Uint64 // recovered in the expiry goroutine

	reads readCounts // hits and misses, striped (see readlog.go)

	// hwm is the highest time read from a clock that is not known
	// monotonic, written at nearly every reading of such a clock: it
	// follows reads' last stripe, off the line of the fields every
	// operation reads (shards, mask, seed, clock).
	hwm atomic.Int64

	// cycleMu guards cycle, every Pass of it, and cycleEv. It is held for
	// one batch of a cycle at a time and never while a listener runs.
	cycleMu sync.Mutex
	cycle   *expiry.Cycle
	cycleEv []Removal // removals of the batch in progress, reported after cycleMu is released

	done     chan struct{} // closed by Close: the expiry goroutine stops
	released chan struct{} // closed when Close has released the shards

	// loopMu guards loopState; loopCond signals its changes to Close.
	loopMu    sync.Mutex
	loopCond  sync.Cond
	loopState loopState
}

// loopState is what the expiry goroutine is doing, as far as Close cares.
type loopState uint8

const (
	// loopStateRunning: the goroutine runs engine code or sleeps; it
	// returns or exits in bounded time once done is closed.
	loopStateRunning loopState = iota
	// loopStateListening: the goroutine runs Config.OnRemove, which may
	// block, or call Close.
	loopStateListening
	// loopStateExited: the goroutine has ended (or never started).
	loopStateExited
)

// New returns an engine configured by cfg, or an error wrapping
// ErrInvalidConfig that names the offending field.
func New(cfg Config) (*Engine, error) {
	cfg, n, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	e := &Engine{
		shards:   make([]shard, n),
		mask:     uint64(n - 1),
		clock:    cfg.Clock,
		mono:     isMonotonic(cfg.Clock),
		maxKey:   cfg.MaxKeySize,
		onRemove: cfg.OnRemove,
		seed:     newKeySeed(),
		done:     make(chan struct{}),
		released: make(chan struct{}),
	}
	e.loopCond.L = &e.loopMu
	if cfg.MaxBytes > 0 {
		e.b = &budget{max: cfg.MaxBytes}
	}
	parts := make([]expiry.Reclaimer, n)
	// The policies' size hint is each shard's even share of the cap.
	pols := cfg.Policy.NewShards(n, cfg.MaxBytes/int64(n))
	for i := range e.shards {
		s := &e.shards[i]
		s.mu.s = s
		s.idx = expiry.NewIndex()
		s.seed = e.seed
		s.b = e.b
		if pols != nil {
			s.pol = pols[i]
			s.volatile = cfg.Policy.Volatile
			s.deadlines, _ = s.pol.(evict.DeadlineSetter)
			s.rlog = new(readLog)
		}
		parts[i] = reclaimer{e, s}
	}
	e.cycle = expiry.NewCycle(parts, cfg.ExpiryBudget, clock.Real{}.Now)
	if err := e.openLog(cfg.Durability); err != nil {
		return nil, err
	}
	if cfg.ExpiryInterval > 0 {
		go e.expireLoop(cfg.ExpiryInterval)
	} else {
		e.loopState = loopStateExited
	}
	return e, nil
}

// isMonotonic reports whether c never goes backwards: clock.Real reads the
// monotonic clock.
func isMonotonic(c clock.Clock) bool {
	switch c.(type) {
	case clock.Real, *clock.Real:
		return true
	}
	return false
}

// now returns the engine's time. For a clock not known to be monotonic it
// never goes backwards: a clock that steps back reads as standing still
// until it passes the highest time already seen, so a key once seen due
// stays due and nothing is resurrected. clock.Real needs no guard.
func (e *Engine) now() int64 {
	n := e.clock.Now()
	if e.mono {
		return n
	}
	for {
		h := e.hwm.Load()
		if n <= h {
			return h
		}
		if e.hwm.CompareAndSwap(h, n) {
			return n
		}
	}
}

// Close stops the background goroutines and releases the engine's memory.
// Later operations return ErrClosed (reads report a miss). Close is
// idempotent, safe to call from any goroutine, listeners included; every
// call returns once the engine is closed. It returns nil, or with a
// durability log the error of closing it (a failed log, or its final
// fsync), the same on every call. With a log, Close first stops the
// rewrite goroutine (waiting for a running rewrite), logs pending
// evictions, and flushes, fsyncs and closes the log; writes still in
// flight then fail with ErrClosed and change nothing.
//
// Close waits for the expiry goroutine to end, except while that goroutine
// runs a listener: Close does not wait for a listener (the listener may be
// the caller, or may wait for the caller). Such a listener may still be
// running when Close returns, but no listener call starts on the expiry
// goroutine after Close has returned, and the goroutine ends as soon as
// the listener returns. A listener running on a caller's goroutine is
// never waited for either.
func (e *Engine) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		// Another Close is releasing the shards: it waits for nothing
		// but engine code, so this returns promptly.
		<-e.released
		return e.closeLog()
	}
	logErr := e.closeLog()
	close(e.done)
	e.loopMu.Lock()
	for e.loopState == loopStateRunning {
		e.loopCond.Wait()
	}
	e.loopMu.Unlock()
	for i := range e.shards {
		s := &e.shards[i]
		s.mu.Lock()
		s.closed = true
		s.tab.Reset()
		s.ents, s.arena, s.free, s.live, s.ttlLive, s.bytes, s.evictb, s.garbage = slots{}, nil, nil, 0, 0, 0, 0, 0
		s.idx.Clear()
		s.pol = nil
		s.mu.Unlock()
	}
	close(e.released)
	return logErr
}

// Clock returns the clock the engine reads (Config.Clock, or clock.Real).
// Code that must agree with the engine on time (a store adapter stamping
// records) reads the same clock.
func (e *Engine) Clock() clock.Clock { return e.clock }

// Closed reports whether Close has been called. Reads on a closed engine
// report a miss; a caller that must tell a miss from a closed engine checks
// Closed after a miss.
func (e *Engine) Closed() bool { return e.closed.Load() }

// MaxKeySize returns the longest key the engine accepts, in bytes
// (Config.MaxKeySize, or DefaultMaxKeySize): a longer key is
// ErrKeyTooLarge for every call that writes, and a miss for every read.
func (e *Engine) MaxKeySize() int { return e.maxKey }

// shardFor returns key's shard and hash (see shard.hash).
func (e *Engine) shardFor(key string) (*shard, uint64) {
	h := e.seed.keyHash(key)
	return &e.shards[h&e.mask], h
}

func (e *Engine) checkKey(key string) error {
	if len(key) > e.maxKey {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrKeyTooLarge, len(key), e.maxKey)
	}
	return nil
}

// checkCall is the contract's error order for a call on key that takes no
// other argument to check: an over-long key, then a closed engine.
func (e *Engine) checkCall(key string) error {
	if err := e.checkKey(key); err != nil {
		return err
	}
	if e.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Len returns the number of resident entries, including due entries that
// have not been reclaimed yet (Stats.Due counts those).
func (e *Engine) Len() int {
	n := 0
	for i := range e.shards {
		s := &e.shards[i]
		s.mu.RLock()
		n += s.live
		s.mu.RUnlock()
	}
	return n
}

// Stats returns a snapshot of the engine's counters. It costs O(shards +
// due entries).
func (e *Engine) Stats() Stats {
	st := Stats{Shards: len(e.shards), ListenerPanics: e.listenerPanics.Load()}
	for i := range e.shards {
		s := &e.shards[i]
		s.mu.RLock()
		now := e.now()
		st.Writes += s.writes
		st.Expired += s.expired
		st.Evicted += s.evicted
		st.Deleted += s.deleted
		st.Replaced += s.replaced
		st.Entries += s.live
		st.Due += s.dueLocked(now)
		st.Bytes += s.bytes
		st.ArenaBytes += int64(cap(s.arena))
		if s.sample.Load() != 0 {
			st.CalmShards++
		}
		s.mu.RUnlock()
	}
	st.Hits, st.Misses = e.reads.sum()
	if e.b != nil && !e.closed.Load() {
		// One reading of the budget: never over the cap, even while
		// writes run (a sum over shards read one at a time could be).
		st.Bytes, st.MaxBytes = e.b.resident.Load(), e.b.max
	}
	return st
}
