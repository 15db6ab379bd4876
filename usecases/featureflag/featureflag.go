// Package featureflag stores feature flags: versioned records with
// compare-and-set writes, an audit log written in the same atomic step,
// history and rollback, percentage rollouts, a kill switch, change
// watchers and a local read-through cache with an explicit staleness
// bound.
//
// # Getting a Backend
//
// A Store runs on any store.Backend. In one process, wrap a tide engine
// with package store/embedded:
//
//	e, err := engine.New(engine.Config{})
//	b, err := embedded.New(embedded.Config{Engine: e})
//	s, err := featureflag.New(featureflag.Config{Backend: b})
//
// Shared by several processes (so that a kill switch thrown in one reaches
// all of them), use Redis or Valkey through the redisstore module
// (github.com/tidekv/tide/usecases/redisstore):
//
//	b, err := redisstore.New(redisstore.Config{Client: rdb})
//	s, err := featureflag.New(featureflag.Config{Backend: b})
//
// # Contract
//
// A flag's State is (Enabled, Killed, Rollout, Salt). Every write is a
// compare-and-set against the version the writer read: a write based on a
// stale read is ErrConflict, never a lost update. Every successful write
// increments the flag's Revision and appends an AuditRecord (actor, time,
// reason, before, after, revision) to the flag's audit log in the same
// atomic store step (store.FlagWrite): there is no flag change without its
// audit record, and no audit record without its change.
//
// Rollout is in basis points (hundredths of a percent) of 10,000 buckets;
// Percent converts a percentage (Percent(12.5) is 1250). A unit (user,
// account) is
// in the rollout iff Bucket(flag, salt, unit) < Rollout, where Bucket is
// xxhash64 of (flag, salt, unit) mod 10,000: stable across processes and
// restarts, and raising Rollout keeps everyone already in. Changing the
// salt reshuffles. Kill forces the flag off for everyone, whatever else it
// says, until unkilled.
//
// # TTL kind
//
// None: flags and audit logs never expire and are pinned (never evicted).
// The audit log keeps the newest Config.AuditKeep records.
//
// # Propagation bounds
//
// A write is visible to Get at once, everywhere. Cached (and Enabled)
// serve a local copy at most Config.MaxStaleness old, so a kill switch
// thrown in another process takes effect here within MaxStaleness; a write
// through this Store updates its own cache at once. Watchers are called at
// once for writes through this Store, and within Config.PollInterval for
// writes elsewhere (by the Store's poller goroutine, which recovers and
// reports a watcher's panic; see Watch).
//
// # Store failure
//
// Writes return the store's error. Cached serves a stale copy when the
// store fails only within MaxStaleness; after that it returns the error —
// Enabled then answers false (fail closed: a feature stays off when its
// state is unknown). Every store failure, and every fail-closed answer of
// Enabled, is reported to Config.Logger (and the failures to
// Config.OnError) with the flag's name.
package featureflag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/usecases/internal/keys"
	"github.com/tidekv/tide/usecases/internal/report"
	"github.com/tidekv/tide/usecases/store"
)

// Buckets is the number of rollout buckets.
const Buckets = 10000

// State is what a flag says.
type State struct {
	// Enabled turns the flag on (for the Rollout share of units).
	Enabled bool
	// Killed forces the flag off for everyone (the kill switch).
	Killed bool
	// Rollout is the share of units the flag is on for, in basis points
	// (hundredths of a percent: use Percent to give a percentage)
	// (0..10000). A new flag's 0 means nobody; 10000 means everyone.
	Rollout int
	// Salt is mixed into the bucket hash. "" means the flag's name. Any
	// bytes round-trip exactly.
	Salt string
}

// Percent returns the rollout in basis points for pct percent: Percent(12.5)
// is 1250, Percent(100) is Buckets. pct must lie in 0..100 with at most two
// decimals (a basis point is the finest share); anything else, NaN
// included, is an error wrapping ErrInvalidFlag.
func Percent(pct float64) (int, error) {
	bp := math.Round(pct * 100)
	if !(pct >= 0 && pct <= 100) || math.Abs(pct*100-bp) > 1e-6 {
		return 0, fmt.Errorf("%w: rollout %v%%, want 0..100 in steps of 0.01", ErrInvalidFlag, pct)
	}
	return int(bp), nil
}

// RolloutPercent returns the rollout as a percentage (Rollout / 100).
func (s State) RolloutPercent() float64 { return float64(s.Rollout) / 100 }

// Flag is a flag's current record.
type Flag struct {
	Name string
	State
	// Revision counts the flag's writes: 1 for its creation.
	Revision  uint64
	UpdatedAt time.Time
	UpdatedBy string
	// the store version, name, revision and state as read: Update judges
	// a write against these, whatever the caller did to the fields above
	version uint64
	read    readAs
}

type readAs struct {
	name     string
	revision uint64
	state    State
}

// AuditRecord is one entry of a flag's audit log.
type AuditRecord struct {
	Revision uint64
	Actor    string
	Time     time.Time
	Reason   string
	Before   *State // nil for the creation
	After    State
}

// The stored forms: JSON with every string as bytes (base64), so any byte
// string round-trips exactly (a salt that changed on the way would move
// units between buckets).
type wireState struct {
	Enabled bool   `json:"enabled,omitempty"`
	Killed  bool   `json:"killed,omitempty"`
	Rollout int    `json:"rollout"`
	Salt    []byte `json:"salt,omitempty"`
}

type wireRecord struct {
	State     wireState `json:"s"`
	Revision  uint64    `json:"rev"`
	UpdatedAt time.Time `json:"at"`
	UpdatedBy []byte    `json:"by,omitempty"`
}

type wireAudit struct {
	Revision uint64     `json:"rev"`
	Actor    []byte     `json:"actor,omitempty"`
	Time     time.Time  `json:"time"`
	Reason   []byte     `json:"reason,omitempty"`
	Before   *wireState `json:"before,omitempty"`
	After    wireState  `json:"after"`
}

func toWire(st State) wireState {
	return wireState{Enabled: st.Enabled, Killed: st.Killed, Rollout: st.Rollout, Salt: []byte(st.Salt)}
}

func (w wireState) state() State {
	return State{Enabled: w.Enabled, Killed: w.Killed, Rollout: w.Rollout, Salt: string(w.Salt)}
}

// Backend is what a Store needs of a store. store.Backend implementations
// (embedded, redisstore) satisfy it.
type Backend interface {
	Now(ctx context.Context) (time.Time, error)
	Get(ctx context.Context, key string) (store.Item, bool, error)
	FlagWrite(ctx context.Context, d *store.FlagWrite) error
}

// Config configures a Store.
type Config struct {
	// Backend holds the flags. Required.
	Backend Backend
	// Prefix is prepended to every key. "" means "tide:flag:". Every
	// adapter checks its Prefix by one rule, and New refuses a Prefix
	// that breaks it with ErrInvalidConfig: 1 to 128 bytes of printable
	// ASCII without space; no '{' (a flag's name is its key's Redis
	// Cluster hash tag); and no overlap with another adapter's default key
	// space ("tide:sess:", "tide:rl:", "tide:idem:", "tide:lease:",
	// "tide:cache:") or the Redis backend's "tide:ver:": the Prefix is
	// neither a prefix of one nor begins with one ("tide:" is refused).
	// Adapters sharing a backend need prefixes neither of which is a
	// prefix of the other.
	Prefix string
	// MaxStaleness bounds how old a cached read may be. 0 means 1 second.
	MaxStaleness time.Duration
	// PollInterval is how often watched flags are re-read. 0 means
	// MaxStaleness.
	PollInterval time.Duration
	// AuditKeep is how many audit records each flag keeps. 0 means 1000.
	AuditKeep int
	// LocalClock measures cache age (the store's clock is elsewhere). nil
	// means clock.Real.
	LocalClock clock.Clock
	// Logger receives a record for every store failure, with the flag's
	// name: the ones returned (Get, writes), the ones decided around
	// (Enabled answering false, fail closed) and the poller's. nil means
	// none.
	Logger *slog.Logger
	// OnError, if set, is called with each of those after it is logged,
	// with the flag's name. It must be safe for concurrent use and should
	// not block.
	OnError func(ctx context.Context, name string, err error)
}

// Store is a feature-flag store over a store.Backend. Create it with New;
// its zero value is not usable. It is safe for concurrent use. Get is one store read; a write is one store read plus one
// atomic decision; Cached is a map lookup when fresh. Close stops the
// watcher goroutine, if one was started.
type Store struct {
	cfg Config
	rep report.Reporter

	// mu guards every field below; pollCond signals changes of
	// pollState to Close.
	mu       sync.Mutex
	pollCond sync.Cond
	cache    map[string]cached
	watchers map[string][]*watcher
	polling  bool // the poller was started
	// pollCancel ends the poller's context (its store reads in flight).
	pollCancel context.CancelFunc
	pollState  pollState
	closed     bool
	done       chan struct{}

	watcherPanics atomic.Uint64 // recovered on the poller
}

// pollState is what the poller goroutine is doing, as far as Close cares.
type pollState uint8

const (
	// pollStateRunning: it reads the store or sleeps, and ends in
	// bounded time once done is closed.
	pollStateRunning pollState = iota
	// pollStateWatching: it runs a watcher, which may block or call Close.
	pollStateWatching
	// pollStateExited: it has ended.
	pollStateExited
)

type cached struct {
	f     Flag
	found bool
	at    int64 // local clock
}

type watcher struct {
	fn   func(Flag)
	last uint64 // revision last notified
}

const defaultPrefix = keys.FlagPrefix

// New returns a Store for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Store, error) {
	switch {
	case cfg.Backend == nil:
		return nil, fmt.Errorf("%w: Backend is nil", ErrInvalidConfig)
	case cfg.MaxStaleness < 0 || cfg.PollInterval < 0 || cfg.AuditKeep < 0:
		return nil, fmt.Errorf("%w: MaxStaleness, PollInterval and AuditKeep must be ≥ 0", ErrInvalidConfig)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = defaultPrefix
	}
	if err := keys.CheckPrefix(cfg.Prefix, defaultPrefix); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if cfg.MaxStaleness == 0 {
		cfg.MaxStaleness = time.Second
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = cfg.MaxStaleness
	}
	if cfg.AuditKeep == 0 {
		cfg.AuditKeep = 1000
	}
	if cfg.LocalClock == nil {
		cfg.LocalClock = clock.Real{}
	}
	s := &Store{cfg: cfg, rep: report.Reporter{Logger: cfg.Logger, OnError: cfg.OnError}, cache: map[string]cached{}, watchers: map[string][]*watcher{}, done: make(chan struct{})}
	s.pollCond.L = &s.mu
	return s, nil
}

func (s *Store) keys(name string) (string, string) {
	k := s.cfg.Prefix + store.HashTag(name)
	return k, k + ":audit"
}

// Bucket returns unit's rollout bucket for a flag: xxhash64 of (flag,
// salt, unit), NUL-separated, mod 10,000.
func Bucket(flag, salt, unit string) int {
	d := xxhash.New()
	d.WriteString(flag)
	d.Write([]byte{0})
	d.WriteString(salt)
	d.Write([]byte{0})
	d.WriteString(unit)
	return int(d.Sum64() % Buckets)
}

// On reports whether f is on for unit: not killed, enabled, and unit's
// bucket below the rollout.
func (f Flag) On(unit string) bool {
	if f.Killed || !f.Enabled {
		return false
	}
	salt := f.Salt
	if salt == "" {
		salt = f.Name
	}
	return Bucket(f.Name, salt, unit) < f.Rollout
}

// Get reads name from the store.
func (s *Store) Get(ctx context.Context, name string) (Flag, bool, error) {
	return s.get(ctx, name, s.cfg.LocalClock.Now())
}

// get is Get with the local time the read began (the age of what it
// reads, for the cache).
func (s *Store) get(ctx context.Context, name string, at int64) (Flag, bool, error) {
	k, _ := s.keys(name)
	it, ok, err := s.cfg.Backend.Get(ctx, k)
	if err != nil {
		if ctx.Err() == nil { // the caller's cancellation is no store failure
			s.rep.Report(ctx, slog.LevelError, "tide: flag read failed", name, err)
		}
		return Flag{}, false, err
	}
	if !ok {
		return Flag{}, false, nil
	}
	var r wireRecord
	if err := json.Unmarshal(it.Value, &r); err != nil {
		err = fmt.Errorf("%w: flag %q: %v", store.ErrCorrupt, name, err)
		s.rep.Report(ctx, slog.LevelError, "tide: flag read failed", name, err)
		return Flag{}, false, err
	}
	f := Flag{Name: name, State: r.State.state(), Revision: r.Revision, UpdatedAt: r.UpdatedAt, UpdatedBy: string(r.UpdatedBy), version: it.Version}
	f.read = readAs{name, f.Revision, f.State}
	s.remember(f, true, at)
	return f, true, nil
}

// remember caches what a read or write that began at local time at found.
// The copy's age counts from at (the store may have changed at any time
// after), and older knowledge never replaces newer: a lower revision does
// not replace a higher one, nor does a miss replace a fresh record (flags
// are never deleted through a Store, so such a miss is a read that ran
// before a write whose record is cached here).
func (s *Store) remember(f Flag, found bool, at int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cache[f.Name]
	switch {
	case !ok:
	case found && c.found && f.Revision == c.f.Revision, !found && !c.found:
		c.at = max(c.at, at)
		s.cache[f.Name] = c
		return
	case found && c.found && f.Revision < c.f.Revision:
		return
	case !found && c.found && time.Duration(s.cfg.LocalClock.Now()-c.at) < s.cfg.MaxStaleness:
		return
	}
	s.cache[f.Name] = cached{f: f, found: found, at: at}
}

// Cached reads name through the local cache: a copy at most MaxStaleness
// old (counted from when it was read from the store), else a store read.
func (s *Store) Cached(ctx context.Context, name string) (Flag, bool, error) {
	now := s.cfg.LocalClock.Now()
	s.mu.Lock()
	c, ok := s.cache[name]
	s.mu.Unlock()
	if ok && time.Duration(now-c.at) < s.cfg.MaxStaleness {
		return c.f, c.found, nil
	}
	f, found, err := s.get(ctx, name, now)
	if err != nil {
		return Flag{}, false, err
	}
	if !found {
		s.remember(Flag{Name: name}, false, now)
	}
	return f, found, nil
}

// Enabled reports whether name is on for unit, through the cache. A
// missing flag, or one whose state cannot be read, is off; that decision
// is logged on Config.Logger (the store failure itself was reported by
// the read).
func (s *Store) Enabled(ctx context.Context, name, unit string) bool {
	f, ok, err := s.Cached(ctx, name)
	if err != nil {
		if l := s.cfg.Logger; l != nil {
			l.LogAttrs(ctx, slog.LevelWarn, "tide: flag state unknown; answering off (fail closed)", slog.String("key", name), slog.Any("err", err))
		}
		return false
	}
	return ok && f.On(unit)
}

func validState(st State) error {
	if st.Rollout < 0 || st.Rollout > Buckets {
		return fmt.Errorf("%w: rollout %d, want 0..%d", ErrInvalidFlag, st.Rollout, Buckets)
	}
	return nil
}

// write CASes prev (zero Flag for a creation) to next with its audit
// record.
func (s *Store) write(ctx context.Context, name string, prev *Flag, next State, actor, reason string) (Flag, error) {
	if name == "" {
		return Flag{}, fmt.Errorf("%w: empty name", ErrInvalidFlag)
	}
	if err := validState(next); err != nil {
		return Flag{}, err
	}
	at := s.cfg.LocalClock.Now()
	now, err := s.cfg.Backend.Now(ctx)
	if err != nil {
		s.rep.Report(ctx, slog.LevelError, "tide: flag write failed", name, err)
		return Flag{}, err
	}
	rec := wireRecord{State: toWire(next), Revision: 1, UpdatedAt: now, UpdatedBy: []byte(actor)}
	audit := wireAudit{Revision: 1, Actor: []byte(actor), Time: now, Reason: []byte(reason), After: toWire(next)}
	var ifVersion uint64
	if prev != nil {
		ifVersion = prev.version
		rec.Revision = prev.read.revision + 1
		audit.Revision = rec.Revision
		before := toWire(prev.read.state)
		audit.Before = &before
	}
	val, _ := json.Marshal(rec)
	aud, _ := json.Marshal(audit)
	k, ak := s.keys(name)
	d := &store.FlagWrite{Key: k, IfVersion: ifVersion, Value: val, AuditKey: ak, Audit: aud, AuditKeep: s.cfg.AuditKeep}
	if err := s.cfg.Backend.FlagWrite(ctx, d); err != nil {
		s.rep.Report(ctx, slog.LevelError, "tide: flag write failed", name, err)
		return Flag{}, err
	}
	if !d.OK {
		if prev == nil {
			return Flag{}, ErrExists
		}
		return Flag{}, ErrConflict
	}
	f := Flag{Name: name, State: next, Revision: rec.Revision, UpdatedAt: now, UpdatedBy: actor, version: d.Version}
	f.read = readAs{name, f.Revision, f.State}
	s.remember(f, true, at)
	s.notify(f, false)
	return f, nil
}

// Create creates flag name in state st. An existing flag is ErrExists.
func (s *Store) Create(ctx context.Context, name string, st State, actor, reason string) (Flag, error) {
	return s.write(ctx, name, nil, st, actor, reason)
}

// Update writes next over prev, a Flag read earlier with Get or Cached
// (or returned by a write), if the flag has not changed since; otherwise
// ErrConflict. prev's State may have been edited in place (the audit
// record's Before is the state as read); a prev whose Name or Revision
// was changed is ErrInvalidFlag.
func (s *Store) Update(ctx context.Context, prev Flag, next State, actor, reason string) (Flag, error) {
	if prev.version == 0 {
		return Flag{}, fmt.Errorf("%w: %q was not read from the store", ErrInvalidFlag, prev.Name)
	}
	if prev.Name != prev.read.name || prev.Revision != prev.read.revision {
		return Flag{}, fmt.Errorf("%w: %q (revision %d) was read as %q (revision %d)", ErrInvalidFlag, prev.Name, prev.Revision, prev.read.name, prev.read.revision)
	}
	return s.write(ctx, prev.Name, &prev, next, actor, reason)
}

// Modify reads name, applies fn to its state and writes it, retrying on
// conflict. A missing flag is ErrNotFound.
func (s *Store) Modify(ctx context.Context, name string, fn func(*State) error, actor, reason string) (Flag, error) {
	for {
		f, ok, err := s.Get(ctx, name)
		if err != nil {
			return Flag{}, err
		}
		if !ok {
			return Flag{}, ErrNotFound
		}
		st := f.State
		if err := fn(&st); err != nil {
			return Flag{}, err
		}
		nf, err := s.Update(ctx, f, st, actor, reason)
		if !errors.Is(err, ErrConflict) {
			return nf, err
		}
		if err := ctx.Err(); err != nil {
			return Flag{}, err
		}
	}
}

// Kill throws the kill switch: name is off for everyone until Unkill.
func (s *Store) Kill(ctx context.Context, name, actor, reason string) (Flag, error) {
	return s.Modify(ctx, name, func(st *State) error { st.Killed = true; return nil }, actor, reason)
}

// Unkill releases the kill switch; the flag's other state is unchanged.
func (s *Store) Unkill(ctx context.Context, name, actor, reason string) (Flag, error) {
	return s.Modify(ctx, name, func(st *State) error { st.Killed = false; return nil }, actor, reason)
}

// SetRollout sets name's rollout to basis points bp (0..10000; see
// Percent).
func (s *Store) SetRollout(ctx context.Context, name string, bp int, actor, reason string) (Flag, error) {
	return s.Modify(ctx, name, func(st *State) error { st.Rollout = bp; return nil }, actor, reason)
}

// History returns name's audit log, oldest first.
func (s *Store) History(ctx context.Context, name string) ([]AuditRecord, error) {
	_, ak := s.keys(name)
	it, ok, err := s.cfg.Backend.Get(ctx, ak)
	if err != nil {
		s.rep.Report(ctx, slog.LevelError, "tide: flag audit log read failed", name, err)
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	recs, err := store.DecodeLog(it.Value)
	if err != nil {
		return nil, err
	}
	out := make([]AuditRecord, 0, len(recs))
	for _, r := range recs {
		var w wireAudit
		if err := json.Unmarshal(r, &w); err != nil {
			return nil, fmt.Errorf("%w: audit record: %v", store.ErrCorrupt, err)
		}
		a := AuditRecord{Revision: w.Revision, Actor: string(w.Actor), Time: w.Time, Reason: string(w.Reason), After: w.After.state()}
		if w.Before != nil {
			b := w.Before.state()
			a.Before = &b
		}
		out = append(out, a)
	}
	return out, nil
}

// Rollback writes the state name had at revision rev as a new revision
// (history is never rewritten). An unknown revision is ErrInvalidFlag.
func (s *Store) Rollback(ctx context.Context, name string, rev uint64, actor, reason string) (Flag, error) {
	hist, err := s.History(ctx, name)
	if err != nil {
		return Flag{}, err
	}
	i := slices.IndexFunc(hist, func(a AuditRecord) bool { return a.Revision == rev })
	if i < 0 {
		return Flag{}, fmt.Errorf("%w: %q has no revision %d in its audit log", ErrInvalidFlag, name, rev)
	}
	target := hist[i].After
	if reason == "" {
		reason = fmt.Sprintf("rollback to revision %d", rev)
	}
	return s.Modify(ctx, name, func(st *State) error { *st = target; return nil }, actor, reason)
}
