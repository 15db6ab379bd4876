// Package engine is tide's embedded key-value engine: a sharded hash map of
// versioned byte values with exact TTLs, atomic counters, conditional and
// compare-and-swap writes, a memory cap with pluggable eviction, and removal
// notifications that tell expiry from eviction.
//
// # Model
//
// Keys are strings (any bytes, the empty string included) up to
// Config.MaxKeySize. Values are []byte, copied on write; reads return copies
// (or append into a caller's buffer), never memory the engine will change.
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
// # TTL arguments
//
// A key that never expires is something a caller says on purpose, with
// NoTTL; a TTL of 0 (say, one computed from a deadline that has just
// passed, or rounded down) is an error, never "forever". One rule for
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
// Config.Policy. Every removal has exactly one Cause.
//
// # Concurrency
//
// An Engine is safe for concurrent use. Every operation on a key is
// linearizable. Reads of a live key take a shard's lock in shared mode and
// do not read the clock unless the key has a TTL.
package engine

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
	"github.com/tidekv/tide/internal/table"
)

// Cause says why an entry was removed.
type Cause uint8

const (
	// Deleted: removed by Delete, GetAndDelete, CompareAndDelete, a
	// transaction, or an Expire whose deadline was already due (as Redis's
	// EXPIRE does).
	Deleted Cause = iota + 1
	// Expired: its deadline passed (lazy or active expiry).
	Expired
	// Evicted: chosen by the eviction policy to make room under MaxBytes.
	Evicted
	// Replaced: its value was overwritten by a write.
	Replaced
)

func (c Cause) String() string {
	switch c {
	case Deleted:
		return "deleted"
	case Expired:
		return "expired"
	case Evicted:
		return "evicted"
	case Replaced:
		return "replaced"
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// Removal describes a removed (or replaced) value, as given to
// Config.OnRemove.
type Removal struct {
	Key     string
	Value   []byte // the value that was removed or replaced
	Version uint64 // its version
	Cause   Cause
}

// NoTTL says "no expiry": the TTL reported for a key without one, and the
// TTL a write passes (SetOptions.TTL, IncrOptions.TTL, Op.TTL) to create or
// leave a key without one. See "TTL arguments" in the package doc.
const NoTTL time.Duration = -1

// Item is a value with its metadata.
type Item struct {
	Value   []byte
	Version uint64
	// TTL is the time left before the key expires, or NoTTL.
	TTL time.Duration
	// Pinned reports whether the key is exempt from eviction.
	Pinned bool
}

// Condition restricts a write to a key that exists or does not.
type Condition uint8

const (
	// Always writes whether or not the key exists.
	Always Condition = iota
	// IfAbsent writes only if the key does not exist (Redis SET NX). A due
	// key does not exist.
	IfAbsent
	// IfPresent writes only if the key exists (Redis SET XX).
	IfPresent
)

// SetOptions modify a write. A write says what happens to the key's TTL:
// TTL > 0 (expire TTL from now), TTL NoTTL (no expiry), or KeepTTL. The
// zero value says none of these and is ErrInvalidTTL (see "TTL arguments"
// in the package doc); Set is the plain write without TTL.
type SetOptions struct {
	// TTL, if positive, makes the key expire TTL from now; NoTTL makes it
	// never expire. 0 and other negatives are ErrInvalidTTL, unless
	// KeepTTL is set without TTLOnCreate (then TTL must be 0).
	TTL time.Duration
	// KeepTTL keeps an existing key's deadline (Redis KEEPTTL); a key it
	// creates has none. It cannot be combined with a TTL unless
	// TTLOnCreate is set.
	KeepTTL bool
	// TTLOnCreate applies TTL (positive or NoTTL) only if this write
	// creates the key; an existing key keeps its deadline (or lack of one).
	TTLOnCreate bool
	// Only restricts the write to an absent or present key.
	Only Condition
	// IfVersion, if non-zero, makes the write a compare-and-swap: it
	// happens only if the key exists with exactly this version.
	IfVersion uint64
	// Pin exempts the key from eviction. Pinning is sticky: a later write
	// without Pin keeps it pinned; Engine.Pin changes it.
	Pin bool
}

// IncrOptions modify a counter operation. The zero value is ErrInvalidTTL:
// TTL must say what a created key gets.
type IncrOptions struct {
	// TTL is the TTL of a key the increment creates (the fixed-window
	// counter needs exactly this): positive, or NoTTL for none; 0 and other
	// negatives are ErrInvalidTTL. An existing key keeps its deadline.
	TTL time.Duration
	// Pin exempts a key created by this increment from eviction (fencing
	// counters need this).
	Pin bool
}

// Stats is a snapshot of the engine's counters.
type Stats struct {
	Hits, Misses uint64
	Writes       uint64 // successful writes (sets, counters, swaps)
	Expired      uint64 // removed because their deadline passed
	Evicted      uint64 // removed to make room under MaxBytes
	Deleted      uint64 // removed by a delete
	Replaced     uint64 // values overwritten
	Entries      int    // resident entries, due ones not yet reclaimed included
	Due          int    // resident entries past their deadline, not yet reclaimed
	Bytes        int64  // accounted bytes of resident entries
	MaxBytes     int64
	ArenaBytes   int64 // bytes held by the shards' key/value arenas
	Shards       int
	// ListenerPanics counts OnRemove panics recovered in the expiry
	// goroutine (a panic on a caller's goroutine reaches the caller).
	ListenerPanics uint64
}

// Engine is the key-value engine. Create it with New; its zero value is not
// usable. See the package documentation for the semantics.
//
// Algorithm: a hash of the key with a secret per-engine seed (hash/maphash,
// so keys picked offline cannot be made to collide: no hash flooding)
// picks one of Config.Shards shards by its low bits, and the shard's table
// word by its high bits; each shard
// is an RWMutex over pointer-free storage (a slot array, a key/value arena
// and an open-addressing table; see shard.go) plus a B-tree of deadlines and
// an eviction policy instance.
//
// Cost: a read hashes the key, takes the shard lock shared, probes the table
// (expected about one probe), compares the key, copies the value, and reads
// the clock only if the key has a TTL: O(1), no allocation with AppendGet.
// A write takes the shard lock exclusively: O(1) plus O(log n) in the
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
	seed     maphash.Seed // secret: the key hash of every shard and table
	clock    clock.Clock
	mono     bool         // clock is known to be monotonic: no guard needed
	hwm      atomic.Int64 // highest time read from a clock that is not known monotonic
	maxKey   int
	onRemove func(Removal)
	closed   atomic.Bool

	listenerPanics atomic.Uint64 // recovered in the expiry goroutine

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
		seed:     maphash.MakeSeed(),
		done:     make(chan struct{}),
		released: make(chan struct{}),
	}
	e.loopCond.L = &e.loopMu
	if cfg.MaxBytes > 0 {
		e.b = &budget{max: cfg.MaxBytes}
	}
	parts := make([]expiry.Reclaimer, n)
	for i := range e.shards {
		s := &e.shards[i]
		s.idx = expiry.NewIndex()
		s.seed = e.seed
		s.b = e.b
		if cfg.Policy.New != nil {
			// The policy's size hint is the shard's even share of the cap.
			s.pol = cfg.Policy.New(cfg.MaxBytes / int64(n))
			s.volatile = cfg.Policy.Volatile
			s.deadlines, _ = s.pol.(evict.DeadlineSetter)
		}
		parts[i] = reclaimer{e, s}
	}
	e.cycle = expiry.NewCycle(parts, cfg.ExpiryBudget, clock.Real{}.Now)
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

type reclaimer struct {
	e *Engine
	s *shard
}

// ReclaimDue runs under cycleMu (within a Pass.Step): the removals go to
// cycleEv, which runExpiry reports once cycleMu is released.
func (r reclaimer) ReclaimDue(now int64, max int) (int, bool) {
	return r.s.reclaimDue(now, max, r.e.events(&r.e.cycleEv))
}

// expireLoop is the expiry goroutine: it runs a cycle every interval (and
// again at once while due entries remain) and reports removals with
// deliverBackground. It owns nothing Close must wait for while it runs a
// listener; see Close.
func (e *Engine) expireLoop(every time.Duration) {
	defer e.setLoopState(loopStateExited)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case <-t.C:
		}
		for {
			if _, more := e.runExpiry(e.deliverBackground); !more {
				break
			}
			select {
			case <-e.done:
				return
			default:
			}
		}
	}
}

func (e *Engine) setLoopState(st loopState) {
	e.loopMu.Lock()
	e.loopState = st
	e.loopMu.Unlock()
	e.loopCond.Broadcast()
}

// RunExpiryCycle runs one active expiry cycle now: it removes due entries in
// deadline order within the configured budget, and reports how many it
// removed and whether due entries remain. The background goroutine runs
// the same cycle every ExpiryInterval (and again at once while entries
// remain); tests with a manual clock call it by hand.
//
// Removals are reported to Config.OnRemove on the calling goroutine after
// each batch, with no engine lock held (a listener may call
// RunExpiryCycle; a listener that blocks delays no other caller). A
// listener's panic reaches the caller; the removals of the rest of the
// cycle then wait for the next cycle.
func (e *Engine) RunExpiryCycle() (removed int, more bool) {
	return e.runExpiry(e.deliver)
}

// runExpiry runs one cycle a batch at a time, holding cycleMu for each
// batch and reporting the batch's removals with deliver after releasing
// it. The delivery mode is the caller's: deliver for a caller's goroutine,
// deliverBackground for the expiry goroutine.
func (e *Engine) runExpiry(deliver func([]Removal)) (removed int, more bool) {
	if e.closed.Load() {
		return 0, false
	}
	e.cycleMu.Lock()
	p := e.cycle.Begin(e.now())
	e.cycleMu.Unlock()
	for !e.closed.Load() {
		e.cycleMu.Lock()
		ok := p.Step()
		ev := e.cycleEv
		e.cycleEv = nil
		e.cycleMu.Unlock()
		deliver(ev)
		if !ok {
			return p.Removed(), p.More()
		}
	}
	return p.Removed(), false
}

// Close stops the background goroutine and releases the engine's memory.
// Later operations return ErrClosed (reads report a miss). Close is
// idempotent, safe to call from any goroutine, listeners included, and
// always returns nil; every call returns once the engine is closed.
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
		return nil
	}
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
		s.ents, s.arena, s.free, s.live, s.ttlLive, s.bytes, s.evictb, s.garbage = nil, nil, nil, 0, 0, 0, 0, 0
		s.idx.Clear()
		s.pol = nil
		s.mu.Unlock()
	}
	close(e.released)
	return nil
}

// Clock returns the clock the engine reads (Config.Clock, or clock.Real).
// Code that must agree with the engine on time (a store adapter stamping
// records) reads the same clock.
func (e *Engine) Clock() clock.Clock { return e.clock }

// Closed reports whether Close has been called. Reads on a closed engine
// report a miss; a caller that must tell a miss from a closed engine checks
// Closed after a miss.
func (e *Engine) Closed() bool { return e.closed.Load() }

// shardFor returns key's shard and hash (see shard.hash).
func (e *Engine) shardFor(key string) (*shard, uint64) {
	h := maphash.String(e.seed, key)
	return &e.shards[h&e.mask], h
}

// events returns where a locked operation should record removals: nil when
// no listener is set (so nothing is copied).
func (e *Engine) events(buf *[]Removal) *[]Removal {
	if e.onRemove == nil {
		return nil
	}
	return buf
}

// deliver calls the listener outside every lock, on the calling
// goroutine. The operation has completed and the engine is consistent
// before the listener runs, so a listener that panics cannot corrupt it: the
// panic propagates to the caller and the removals after it in the same
// operation are not reported.
func (e *Engine) deliver(ev []Removal) {
	for i := range ev {
		e.onRemove(ev[i])
	}
}

// deliverBackground is deliver for the expiry goroutine: a listener panic
// is recovered and counted (Stats.ListenerPanics) instead of crashing the
// process, and the remaining removals are still reported. Once Close has
// begun it starts no listener call (Close does not wait for one that is
// running; see Close).
func (e *Engine) deliverBackground(ev []Removal) {
	for i := range ev {
		e.loopMu.Lock()
		if e.closed.Load() {
			e.loopMu.Unlock()
			return
		}
		e.loopState = loopStateListening
		e.loopMu.Unlock()
		e.loopCond.Broadcast()
		func() {
			defer func() {
				if recover() != nil {
					e.listenerPanics.Add(1)
				}
				e.setLoopState(loopStateRunning)
			}()
			e.onRemove(ev[i])
		}()
	}
}

// Get returns a copy of key's value.
func (e *Engine) Get(key string) ([]byte, bool) {
	return e.AppendGet(nil, key)
}

// AppendGet appends key's value to dst and returns the extended buffer. It
// allocates nothing when dst has room.
func (e *Engine) AppendGet(dst []byte, key string) ([]byte, bool) {
	s, h := e.shardFor(key)
	s.mu.RLock()
	slot, ok := s.findLocked(key, h)
	if !ok {
		if s.pol != nil {
			s.pol.Miss(h)
		}
		s.mu.RUnlock()
		s.misses.Add(1)
		return dst, false
	}
	off := s.ents[slot] - 1
	hd := s.arena[off : off+hdrSize : off+hdrSize]
	if d := int64(binary.LittleEndian.Uint64(hd[hdrDeadline:])); d != 0 && e.now() >= d {
		s.mu.RUnlock()
		e.expireNow(s, key, h)
		s.misses.Add(1)
		return dst, false
	}
	kf := binary.LittleEndian.Uint32(hd[hdrKlen:])
	v := off + hdrSize + kf&maxKeyLen
	dst = append(dst, s.arena[v:v+binary.LittleEndian.Uint32(hd[hdrVlen:])]...)
	if kf>>24&flagTracked != 0 {
		s.pol.Access(evict.Handle(slot))
	}
	s.mu.RUnlock()
	s.hits.Add(1)
	return dst, true
}

// GetItem returns a copy of key's value with its version and TTL.
func (e *Engine) GetItem(key string) (Item, bool) {
	s, h := e.shardFor(key)
	s.mu.RLock()
	slot, ok := s.findLocked(key, h)
	if !ok {
		if s.pol != nil {
			s.pol.Miss(h)
		}
		s.mu.RUnlock()
		s.misses.Add(1)
		return Item{}, false
	}
	en := s.at(slot)
	var now int64
	if en.deadline() != 0 {
		now = e.now()
		if now >= en.deadline() {
			s.mu.RUnlock()
			e.expireNow(s, key, h)
			s.misses.Add(1)
			return Item{}, false
		}
	}
	it := itemOf(en, now)
	if en.flags()&flagTracked != 0 {
		s.pol.Access(evict.Handle(slot))
	}
	s.mu.RUnlock()
	s.hits.Add(1)
	return it, true
}

func itemOf(en entry, now int64) Item {
	it := Item{Value: append([]byte{}, en.value()...), Version: en.version(), TTL: NoTTL, Pinned: en.flags()&flagPinned != 0}
	if d := en.deadline(); d != 0 {
		it.TTL = time.Duration(d - now)
	}
	return it
}

// expireNow removes key if it is (still) due: lazy expiry, upgraded to the
// exclusive lock.
func (e *Engine) expireNow(s *shard, key string, h uint64) {
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	if slot, ok := s.findLocked(key, h); ok && !s.closed {
		// A reader saw this entry due at its now; e.now() is at least that.
		if d := s.at(slot).deadline(); d != 0 && e.now() >= d {
			s.removeLocked(slot, h, Expired, evp)
		}
	}
	s.mu.Unlock()
	e.deliver(ev)
}

// lookupLocked finds key for a writer, removing it first if it is due. It
// returns the slot and whether a live entry exists.
func (s *shard) lookupLocked(key string, h uint64, now int64, ev *[]Removal) (uint32, bool) {
	slot, ok := s.findLocked(key, h)
	if ok {
		if d := s.at(slot).deadline(); d != 0 && now >= d {
			s.removeLocked(slot, h, Expired, ev)
			return 0, false
		}
	}
	return slot, ok
}

// checkWriteTTL applies the rule of "TTL arguments" (package doc) to the
// TTL of a write; keep reports a write that keeps the key's TTL (KeepTTL
// without TTLOnCreate), whose TTL must be left 0.
func checkWriteTTL(ttl time.Duration, keep bool) error {
	switch {
	case keep && ttl != 0:
		return fmt.Errorf("%w: TTL %v with KeepTTL", ErrInvalidOptions, ttl)
	case keep, ttl > 0, ttl == NoTTL:
		return nil
	}
	return fmt.Errorf("%w: %v (want > 0, or NoTTL for no expiry)", ErrInvalidTTL, ttl)
}

// deadlineAfter returns now+ttl, or ErrInvalidTTL if ttl ≤ 0 or the sum
// overflows.
func deadlineAfter(now int64, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	if now > math.MaxInt64-int64(ttl) {
		return 0, fmt.Errorf("%w: %v overflows the clock", ErrInvalidTTL, ttl)
	}
	return now + int64(ttl), nil
}

func (e *Engine) checkKey(key string) error {
	if len(key) > e.maxKey {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrKeyTooLarge, len(key), e.maxKey)
	}
	return nil
}

// Set stores value under key with no TTL (clearing any TTL the key had) and
// returns the new version.
func (e *Engine) Set(key string, value []byte) (version uint64, err error) {
	version, _, err = e.SetWith(key, value, SetOptions{TTL: NoTTL})
	return version, err
}

// SetTTL stores value under key, expiring ttl from now. A ttl ≤ 0 is
// ErrInvalidTTL.
func (e *Engine) SetTTL(key string, value []byte, ttl time.Duration) (version uint64, err error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	version, _, err = e.SetWith(key, value, SetOptions{TTL: ttl})
	return version, err
}

// SetWith stores value under key as modified by o. It returns the new
// version and true, or false if o's condition (Only, IfVersion) did not
// hold, in which case nothing changed. Errors: ErrKeyTooLarge,
// ErrInvalidTTL, ErrInvalidOptions, ErrTooLarge, ErrOutOfMemory, ErrClosed;
// on error nothing changed.
func (e *Engine) SetWith(key string, value []byte, o SetOptions) (version uint64, ok bool, err error) {
	if err := e.checkKey(key); err != nil {
		return 0, false, err
	}
	if err := checkWriteTTL(o.TTL, o.KeepTTL && !o.TTLOnCreate); err != nil {
		return 0, false, err
	}
	if o.Only > IfPresent || (o.IfVersion != 0 && o.Only == IfAbsent) {
		return 0, false, fmt.Errorf("%w: condition %d with IfVersion %d", ErrInvalidOptions, o.Only, o.IfVersion)
	}
	if e.closed.Load() {
		return 0, false, ErrClosed
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	var r room
	err = e.withRoom(&r, evp, func() error {
		s.mu.Lock()
		version, ok, err = s.setLocked(e, key, h, value, o, &r, evp)
		e.b.endRound(&r, err)
		s.mu.Unlock()
		return err
	})
	e.deliver(ev)
	return version, ok, err
}

// withRoom runs a write (which takes and releases its own locks) until it
// finishes without needing to visit other shards for room, visiting them
// between rounds (see budget), and gives back the room it did not use.
func (e *Engine) withRoom(r *room, ev *[]Removal, write func() error) error {
	err := write()
	for err == errVisit {
		if !e.visit(r, ev) {
			err = fmt.Errorf("%w: MaxBytes %d is full of entries that may not be evicted", ErrOutOfMemory, e.b.max)
			break
		}
		err = write()
	}
	e.b.release(r)
	if r.carried {
		e.b.carriers.Add(-1)
	}
	return err
}

// setLocked is SetWith under the shard's exclusive lock.
func (s *shard) setLocked(e *Engine, key string, h uint64, value []byte, o SetOptions, r *room, ev *[]Removal) (uint64, bool, error) {
	if s.closed {
		return 0, false, ErrClosed
	}
	now := e.now()
	slot, found := s.lookupLocked(key, h, now, ev)
	switch {
	case o.Only == IfAbsent && found, o.Only == IfPresent && !found:
		return 0, false, nil
	case o.IfVersion != 0 && (!found || s.at(slot).version() != o.IfVersion):
		return 0, false, nil
	}
	var deadline int64
	switch {
	case found && (o.KeepTTL || o.TTLOnCreate):
		deadline = s.at(slot).deadline()
	case o.TTL > 0:
		d, err := deadlineAfter(now, o.TTL)
		if err != nil {
			return 0, false, err
		}
		deadline = d
	}
	return s.writeLocked(key, h, slot, found, value, deadline, o.Pin, now, r, ev)
}

// writeLocked stores value under key (at slot if found) with the given
// deadline, first making r hold the bytes the write adds under the cap. On
// error nothing changed (but room made may be held in r).
func (s *shard) writeLocked(key string, h uint64, slot uint32, found bool, value []byte, deadline int64, pin bool, now int64, r *room, ev *[]Removal) (uint64, bool, error) {
	newSize := int64(len(key)) + int64(len(value)) + EntryOverhead
	if err := s.b.checkSize(len(key), len(value)); err != nil {
		return 0, false, err
	}
	var oldSize int64
	if found {
		oldSize = s.at(slot).size()
	}
	if int64(len(s.arena)-s.garbage)+int64(hdrSize+len(key)+len(value)) > maxArena {
		// The shard's arena (offsets are 32-bit) is full of live data.
		return 0, false, fmt.Errorf("%w: shard arena full (%d bytes)", ErrOutOfMemory, maxArena)
	}
	if grow := newSize - oldSize; s.b != nil && grow > 0 && !s.b.has(r, grow) {
		var excl [1]uint32
		exclude := excl[:0]
		if found {
			exclude = append(exclude, slot)
		}
		if err := s.b.reserveLocked(r, grow, now, []roomPart{{s, exclude}}, ev); err != nil {
			if found {
				s.syncPolicyLocked(s.at(slot), h, oldSize, false)
			}
			return 0, false, err
		}
	}
	v := s.applyWriteLocked(key, h, slot, found, value, deadline, pin, ev)
	if s.b != nil {
		r.held -= newSize - oldSize
	}
	return v, true, nil
}

// checkSize returns ErrTooLarge for an entry that can never be stored: key
// + value over MaxEntrySize, or with EntryOverhead over the cap. b may be
// nil (no cap).
func (b *budget) checkSize(klen, vlen int) error {
	kv := int64(klen) + int64(vlen)
	if kv > MaxEntrySize {
		return fmt.Errorf("%w: key + value = %d bytes, MaxEntrySize is %d", ErrTooLarge, kv, MaxEntrySize)
	}
	if b != nil && kv+EntryOverhead > b.max {
		return fmt.Errorf("%w: key + value + EntryOverhead = %d bytes, MaxBytes is %d", ErrTooLarge, kv+EntryOverhead, b.max)
	}
	return nil
}

// applyWriteLocked stores value under key (at slot if found) with the
// given deadline, and returns the new version. The caller has checked the
// size and holds the room (see budget): the resident bytes grow by the
// entry's change in size.
func (s *shard) applyWriteLocked(key string, h uint64, slot uint32, found bool, value []byte, deadline int64, pin bool, ev *[]Removal) uint64 {
	var oldSize int64
	if found {
		oldSize = s.at(slot).size()
	}
	s.version++
	s.writes++
	if found {
		en := s.at(slot)
		if ev != nil {
			*ev = append(*ev, Removal{Key: key, Value: append([]byte(nil), en.value()...), Version: en.version(), Cause: Replaced})
		}
		s.replaced++
		if uint32(len(value)) <= en.vlen() {
			copy(en.value(), value)
			s.garbage += int(en.vlen()) - len(value)
			en.setVlen(uint32(len(value)))
		} else {
			// Append a new record; the old one becomes garbage. The
			// allocation may rebuild the arena, so copy the old header
			// from wherever it is afterwards.
			off := s.allocLocked(hdrSize + len(key) + len(value))
			old := s.at(slot)
			copy(s.arena[off:off+hdrSize], old.hdr())
			s.garbage += old.recLen()
			s.ents[slot] = off + 1
			en = s.at(slot)
			en.setVlen(uint32(len(value)))
			copy(en.key(), key)
			copy(en.value(), value)
		}
		en.setVersion(s.version)
		if pin {
			en.setFlags(en.flags() | flagPinned)
		}
		s.setDeadlineLocked(en, deadline)
		s.addBytesLocked(en.size() - oldSize)
		s.syncPolicyLocked(en, h, oldSize, true)
		return en.version()
	}
	off := s.allocLocked(hdrSize + len(key) + len(value))
	slot = s.newSlotLocked()
	s.ents[slot] = off + 1
	hd := s.arena[off : off+hdrSize]
	var flags uint32
	if pin {
		flags = flagPinned
	}
	binary.LittleEndian.PutUint64(hd[hdrVersion:], s.version)
	binary.LittleEndian.PutUint64(hd[hdrDeadline:], 0)
	binary.LittleEndian.PutUint32(hd[hdrVlen:], uint32(len(value)))
	binary.LittleEndian.PutUint32(hd[hdrKlen:], uint32(len(key))|flags<<24)
	en := s.at(slot)
	copy(en.key(), key)
	copy(en.value(), value)
	s.setDeadlineLocked(en, deadline)
	s.tab.Insert(table.Tag(h), slot)
	s.live++
	s.addBytesLocked(en.size())
	s.syncPolicyLocked(en, h, 0, true)
	return en.version()
}

// CompareAndSwap stores value under key if the key's current version is old,
// keeping its TTL and pinning, and returns the new version:
//
//	if exists(key) && version(key) == old {
//		value(key), version(key) = value, next()
//		return version(key), true, nil
//	}
//	return 0, false, nil
//
// A missing or due key never matches. Errors are those of SetWith.
func (e *Engine) CompareAndSwap(key string, old uint64, value []byte) (version uint64, swapped bool, err error) {
	if old == 0 {
		return 0, false, nil
	}
	return e.SetWith(key, value, SetOptions{IfVersion: old, KeepTTL: true})
}

// Delete removes key and reports whether it existed.
func (e *Engine) Delete(key string) (deleted bool) {
	_, deleted = e.remove(key, 0, false)
	return deleted
}

// CompareAndDelete removes key if its current version is version:
//
//	if exists(key) && version(key) == version {
//		delete(key)
//		return true
//	}
//	return false
func (e *Engine) CompareAndDelete(key string, version uint64) (deleted bool) {
	if version == 0 {
		return false
	}
	_, deleted = e.remove(key, version, false)
	return deleted
}

// GetAndDelete removes key and returns the value it had (Redis GETDEL).
func (e *Engine) GetAndDelete(key string) (value []byte, loaded bool) {
	return e.remove(key, 0, true)
}

func (e *Engine) remove(key string, version uint64, load bool) ([]byte, bool) {
	if e.closed.Load() || len(key) > e.maxKey {
		return nil, false
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	var val []byte
	s.mu.Lock()
	slot, ok := s.lookupLocked(key, h, e.now(), evp)
	if ok && version != 0 && s.at(slot).version() != version {
		ok = false
	}
	if ok {
		if load {
			val = append([]byte{}, s.at(slot).value()...)
		}
		s.removeLocked(slot, h, Deleted, evp)
		s.maybeShrinkLocked()
	}
	s.mu.Unlock()
	e.deliver(ev)
	return val, ok
}

// ExpireCondition restricts Expire as Redis's EXPIRE options do.
type ExpireCondition uint8

const (
	// ExpireAlways sets the deadline unconditionally.
	ExpireAlways ExpireCondition = iota
	// ExpireNX sets it only if the key has no TTL.
	ExpireNX
	// ExpireXX sets it only if the key has a TTL.
	ExpireXX
	// ExpireGT sets it only if it is later than the current one (a key
	// without TTL counts as infinite, so GT never applies to it).
	ExpireGT
	// ExpireLT sets it only if it is earlier than the current one (a key
	// without TTL counts as infinite, so LT always applies to it).
	ExpireLT
)

// Expire sets key to expire ttl from now if cond holds, and reports whether
// it did. A ttl ≤ 0 (NoTTL included: Persist removes a TTL, Delete a key)
// or one that overflows the clock is ErrInvalidTTL, and the key is left as
// it was.
func (e *Engine) Expire(key string, ttl time.Duration, cond ExpireCondition) (bool, error) {
	if cond > ExpireLT {
		return false, fmt.Errorf("%w: expire condition %d", ErrInvalidOptions, cond)
	}
	if ttl <= 0 {
		return false, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	return e.expireAt(key, cond, func(now int64) (int64, error) {
		return deadlineAfter(now, ttl)
	})
}

// ExpireAt is Expire with an absolute deadline on the engine's clock. A
// deadline already due deletes the key (as Redis's EXPIREAT does; the
// removal's cause is Deleted).
func (e *Engine) ExpireAt(key string, deadline time.Time, cond ExpireCondition) (bool, error) {
	if deadline.After(time.Unix(0, math.MaxInt64)) {
		return false, fmt.Errorf("%w: deadline %v past the clock's range", ErrInvalidTTL, deadline)
	}
	d := int64(math.MinInt64) // before 1678: long due
	if !deadline.Before(time.Unix(0, math.MinInt64)) {
		d = deadline.UnixNano()
	}
	return e.expireAt(key, cond, func(int64) (int64, error) { return d, nil })
}

// expireAt sets key's deadline to deadlineAt(now) if cond holds. now is
// read under the shard lock, so that the key's liveness and its new
// deadline are decided at one instant.
func (e *Engine) expireAt(key string, cond ExpireCondition, deadlineAt func(now int64) (int64, error)) (bool, error) {
	if cond > ExpireLT {
		return false, fmt.Errorf("%w: expire condition %d", ErrInvalidOptions, cond)
	}
	if e.closed.Load() {
		return false, ErrClosed
	}
	if len(key) > e.maxKey {
		return false, nil
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	now := e.now()
	d, err := deadlineAt(now)
	if err != nil {
		s.mu.Unlock()
		return false, err
	}
	done := false
	if slot, ok := s.lookupLocked(key, h, now, evp); ok {
		en := s.at(slot)
		cur := en.deadline()
		switch cond {
		case ExpireAlways:
			done = true
		case ExpireNX:
			done = cur == 0
		case ExpireXX:
			done = cur != 0
		case ExpireGT:
			done = cur != 0 && d > cur
		case ExpireLT:
			done = cur == 0 || d < cur
		}
		if done {
			if d <= now {
				s.removeLocked(slot, h, Deleted, evp)
				s.maybeShrinkLocked()
			} else {
				size := en.size()
				s.setDeadlineLocked(en, d)
				s.syncPolicyLocked(en, h, size, false)
			}
		}
	}
	s.mu.Unlock()
	e.deliver(ev)
	return done, nil
}

// Persist removes key's TTL and reports whether it had one.
func (e *Engine) Persist(key string) bool {
	if e.closed.Load() || len(key) > e.maxKey {
		return false
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	done := false
	if slot, ok := s.lookupLocked(key, h, e.now(), evp); ok {
		en := s.at(slot)
		if en.deadline() != 0 {
			size := en.size()
			s.setDeadlineLocked(en, 0)
			s.syncPolicyLocked(en, h, size, false)
			done = true
		}
	}
	s.mu.Unlock()
	e.deliver(ev)
	return done
}

// Pin sets or clears key's exemption from eviction and reports whether the
// key exists.
func (e *Engine) Pin(key string, pinned bool) bool {
	if e.closed.Load() || len(key) > e.maxKey {
		return false
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	slot, ok := s.lookupLocked(key, h, e.now(), evp)
	if ok {
		en := s.at(slot)
		if pinned {
			en.setFlags(en.flags() | flagPinned)
		} else {
			en.setFlags(en.flags() &^ flagPinned)
		}
		s.syncPolicyLocked(en, h, en.size(), false)
	}
	s.mu.Unlock()
	e.deliver(ev)
	return ok
}

// TTL reports the time left before key expires: ok is false if the key does
// not exist; ttl is NoTTL if it exists without expiry.
func (e *Engine) TTL(key string) (ttl time.Duration, ok bool) {
	it, ok := e.peek(key)
	return it.TTL, ok
}

// peek reads key's metadata without copying its value or counting a hit.
func (e *Engine) peek(key string) (Item, bool) {
	s, h := e.shardFor(key)
	s.mu.RLock()
	slot, ok := s.findLocked(key, h)
	if !ok {
		s.mu.RUnlock()
		return Item{}, false
	}
	en := s.at(slot)
	it := Item{Version: en.version(), TTL: NoTTL, Pinned: en.flags()&flagPinned != 0}
	if d := en.deadline(); d != 0 {
		now := e.now()
		if now >= d {
			s.mu.RUnlock()
			e.expireNow(s, key, h)
			return Item{}, false
		}
		it.TTL = time.Duration(d - now)
	}
	s.mu.RUnlock()
	return it, true
}

// GetAndExpire returns key's item and sets it to expire ttl from now, in one
// step (Redis GETEX; a sliding TTL). A ttl ≤ 0 is ErrInvalidTTL.
func (e *Engine) GetAndExpire(key string, ttl time.Duration) (Item, bool, error) {
	if ttl <= 0 {
		return Item{}, false, fmt.Errorf("%w: %v (must be positive)", ErrInvalidTTL, ttl)
	}
	if e.closed.Load() {
		return Item{}, false, ErrClosed
	}
	if len(key) > e.maxKey {
		return Item{}, false, nil
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	now := e.now()
	d, err := deadlineAfter(now, ttl)
	if err != nil {
		s.mu.Unlock()
		return Item{}, false, err
	}
	slot, ok := s.lookupLocked(key, h, now, evp)
	var it Item
	if ok {
		en := s.at(slot)
		size := en.size()
		s.setDeadlineLocked(en, d)
		s.syncPolicyLocked(en, h, size, true)
		it = itemOf(en, now)
	}
	s.mu.Unlock()
	e.deliver(ev)
	if ok {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	return it, ok, nil
}

// Incr adds 1 to the integer at key; see IncrBy.
func (e *Engine) Incr(key string) (int64, error) { return e.IncrWith(key, 1, IncrOptions{TTL: NoTTL}) }

// Decr subtracts 1 from the integer at key; see IncrBy.
func (e *Engine) Decr(key string) (int64, error) { return e.IncrWith(key, -1, IncrOptions{TTL: NoTTL}) }

// IncrBy adds delta to the integer at key and returns the result:
//
//	n := 0
//	if exists(key) { n = parse(value(key)) }  // else ErrNotInteger
//	n += delta                                  // else ErrOverflow
//	value(key), version(key) = format(n), next()
//	return n
//
// The value is a base-10 int64 in canonical ASCII form (Redis-compatible:
// no sign other than a leading '-', no leading zeros, no spaces, no "-0").
// A missing key counts as 0. The key's TTL is kept. On error the value is
// unchanged.
func (e *Engine) IncrBy(key string, delta int64) (int64, error) {
	return e.IncrWith(key, delta, IncrOptions{TTL: NoTTL})
}

// DecrBy subtracts delta from the integer at key; see IncrBy.
func (e *Engine) DecrBy(key string, delta int64) (int64, error) {
	if delta == math.MinInt64 {
		return 0, ErrOverflow
	}
	return e.IncrWith(key, -delta, IncrOptions{TTL: NoTTL})
}

// IncrWith is IncrBy with options that apply when the increment creates the
// key: a TTL (set only then, so a fixed window is not extended by later
// increments) and pinning.
func (e *Engine) IncrWith(key string, delta int64, o IncrOptions) (int64, error) {
	if err := e.checkKey(key); err != nil {
		return 0, err
	}
	if err := checkWriteTTL(o.TTL, false); err != nil {
		return 0, err
	}
	if e.closed.Load() {
		return 0, ErrClosed
	}
	s, h := e.shardFor(key)
	var ev []Removal
	evp := e.events(&ev)
	var n int64
	var r room
	err := e.withRoom(&r, evp, func() (err error) {
		s.mu.Lock()
		n, err = s.incrLocked(e, key, h, delta, o, &r, evp)
		e.b.endRound(&r, err)
		s.mu.Unlock()
		return err
	})
	e.deliver(ev)
	return n, err
}

func (s *shard) incrLocked(e *Engine, key string, h uint64, delta int64, o IncrOptions, r *room, ev *[]Removal) (int64, error) {
	if s.closed {
		return 0, ErrClosed
	}
	now := e.now()
	slot, found := s.lookupLocked(key, h, now, ev)
	var n int64
	var deadline int64
	if found {
		en := s.at(slot)
		v, ok := parseInt(en.value())
		if !ok {
			return 0, ErrNotInteger
		}
		n = v
		deadline = en.deadline()
	} else if o.TTL > 0 {
		d, err := deadlineAfter(now, o.TTL)
		if err != nil {
			return 0, err
		}
		deadline = d
	}
	if (delta > 0 && n > math.MaxInt64-delta) || (delta < 0 && n < math.MinInt64-delta) {
		return 0, ErrOverflow
	}
	n += delta
	var buf [20]byte
	if _, _, err := s.writeLocked(key, h, slot, found, strconv.AppendInt(buf[:0], n, 10), deadline, o.Pin && !found, now, r, ev); err != nil {
		return 0, err
	}
	return n, nil
}

// parseInt parses a canonical base-10 int64 as Redis's string2ll does.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false // leading zero, "-0", sign, space, or garbage
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // -(1<<63) wraps to MinInt64 as intended
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
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
		s.mu.RUnlock()
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
	}
	if e.b != nil && !e.closed.Load() {
		// One reading of the budget: never over the cap, even while
		// writes run (a sum over shards read one at a time could be).
		st.Bytes, st.MaxBytes = e.b.resident.Load(), e.b.max
	}
	return st
}

// All returns an iterator over the live entries: key and a copy of the
// value. It never yields a due entry (and removes those it passes, as any
// read does). Iteration is weakly consistent, like sync.Map's Range: it
// locks one shard at a time and yields outside the lock, so entries written
// during the iteration may or may not be seen. It does not count hits.
func (e *Engine) All() iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		for k, it := range e.Items() {
			if !yield(k, it.Value) {
				return
			}
		}
	}
}

// Items is All with each entry's Item (version and TTL).
func (e *Engine) Items() iter.Seq2[string, Item] {
	return func(yield func(string, Item) bool) {
		type kv struct {
			k  string
			it Item
		}
		const batch = 256
		buf := make([]kv, 0, batch)
		var due []string
		for i := range e.shards {
			s := &e.shards[i]
			for next := 0; ; {
				buf, due = buf[:0], due[:0]
				s.mu.RLock()
				now := e.now()
				for ; next < len(s.ents) && len(buf) < batch; next++ {
					if s.ents[next] == 0 {
						continue
					}
					en := s.at(uint32(next))
					if d := en.deadline(); d != 0 && now >= d {
						due = append(due, string(en.key()))
						continue
					}
					buf = append(buf, kv{string(en.key()), itemOf(en, now)})
				}
				end := next >= len(s.ents)
				s.mu.RUnlock()
				for _, k := range due {
					_, h := e.shardFor(k)
					e.expireNow(s, k, h)
				}
				for _, p := range buf {
					if !yield(p.k, p.it) {
						return
					}
				}
				if end {
					break
				}
			}
		}
	}
}
