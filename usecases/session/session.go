// Package session keeps server-side web sessions in a store.Backend.
//
// # Getting a Backend
//
// A Manager runs on any store.Backend. In one process, wrap a tide engine
// with package store/embedded:
//
//	e, err := engine.New(engine.Config{})
//	b, err := embedded.New(embedded.Config{Engine: e})
//	m, err := session.New(session.Config{Backend: b})
//
// Shared by several processes, use Redis or Valkey through the redisstore
// module (github.com/tidekv/tide/usecases/redisstore):
//
//	b, err := redisstore.New(redisstore.Config{Client: rdb})
//
// and in both cases hand the Manager to NewMiddleware for net/http.
//
// # Anonymous and signed-in sessions
//
// A session belongs to a user (Create) or to nobody yet (CreateAnonymous:
// a cart before login, a CSRF token, flash messages). Login turns the
// visitor's session into a user's session under a new ID: the values of an
// anonymous session carry over (the cart survives sign-in), the values of
// another user's session do not, and the old ID is revoked, so an ID an
// attacker planted in the victim's browser before login (session fixation)
// is worthless after it. Values an anonymous visitor set carry over
// unchecked: keep no authorization decision in them, and issue a new CSRF
// token after login.
//
// # Values
//
// Values are bytes by name; the typed accessors (SetString/GetString,
// SetInt/GetInt, SetBool/GetBool, SetTime/GetTime) encode them as text,
// and report false for a missing or malformed value. Pop and PopString
// read a value and delete it: a flash message shown once.
//
// # Remember me
//
// Record.Remember marks a session the user asked to keep ("remember me"):
// its idle timeout is Config.RememberIdleTimeout instead of IdleTimeout,
// and the middleware gives its cookie a Max-Age reaching its absolute
// deadline, so that it survives a browser restart. Other sessions get a
// browser-session cookie.
//
// # Contract
//
// A session ID is 256 bits from crypto/rand, encoded base64url (43
// characters, cookie-safe). The store never sees it: the record lives under
// a SHA-256 hash of the ID, so a leaked keyspace dump yields no usable IDs.
// The record holds the user, tenant, authorization context, creation time,
// last activity, the absolute deadline and the caller's values (bytes),
// encoded by a pluggable Codec (JSON by default).
//
// Unknown, malformed, expired and revoked IDs all look the same to the
// caller: Load reports a miss, with no error.
//
// # TTL kind
//
// Sliding, capped: a session expires after IdleTimeout without activity,
// and in any case at its absolute deadline (creation + AbsoluteTimeout),
// which never moves — not on activity, not on rotation. The store TTL is
// always min(idle, time to the absolute deadline), so the store itself
// expires the session. Activity refreshes the idle timer at most once per
// TouchInterval (a touch is a write; a write per request would not scale).
//
// # Concurrency
//
// Every write is a compare-and-swap on the record's version: a Save of a
// session that changed since it was loaded fails with ErrConflict instead
// of overwriting the other update. Update reloads and reapplies on
// conflict. A throttled touch that loses a race is simply dropped (the
// winner refreshed the session anyway).
//
// # Revocation
//
// Destroy deletes the record: the next Load misses (immediate). Each
// user's sessions are listed in a per-user index, so DestroyAll revokes
// every session of a user without scanning the store. Rotate issues a new
// ID for the same session (do it on login and privilege change) and
// deletes the old one.
//
// The index is one store value per user, keyed by the user ID alone:
// List, DestroyAll and DestroyHandle span every tenant of the user's
// sessions (Record.Tenant is the session's attribute, not part of the
// user's identity). An application whose user IDs are unique only within
// a tenant must qualify them (tenant and user, unambiguously encoded), or
// give each tenant its own Manager with its own Prefix. Managers on
// different prefixes (neither a prefix of the other) never see or revoke
// each other's sessions.
//
// A user has at most Config.MaxUserSessions sessions (100 by default), so
// that nobody who can sign in as a user (the user's own script, an
// attacker holding the password) can grow the index, which every sign-in
// rewrites and DestroyAll walks, without bound. A sign-in at the limit
// visits the index oldest first: it drops entries whose session is gone
// (expired, revoked, evicted) and, if that is not enough, revokes the
// user's oldest live sessions (counted as "evicted" in Events), one per
// sign-in in the steady state. A Rotate or a re-login (Login with the
// user's own session) replaces its session instead. An entry younger than
// a minute without a record may be a sign-in still being written: it is
// never dropped, and a sign-in that finds only such entries fails with
// ErrTooManySessions. (A sign-in whose context ends before its record is
// written removes its own entry: a client that hangs up leaves none.)
//
// # Eviction
//
// With Config.Pin the records are pinned: never evicted, removed only by
// expiry or revocation. Without it (the default) an evicted session is a
// forced logout: the next Load misses and the user signs in again;
// nothing else breaks. A user's index is pinned either way: it is read
// only at sign-in, List and DestroyAll, so an eviction policy would take
// it long before the record of a session in use, and an evicted index
// would hide that session from DestroyAll and from MaxUserSessions. It
// costs at most MaxUserSessions entries (about 150 bytes each) per
// signed-in user, and expires with the user's last session. A store that
// cannot pin (Redis) must not evict it either: run it with
// maxmemory-policy noeviction, or DestroyAll may miss sessions under
// memory pressure.
//
// # Store failure
//
// Load, Save and the rest return the store's error; the middleware treats
// a failed Load as "no session" (the request proceeds unauthenticated,
// fail closed; or is refused with 503 under
// HTTPConfig.RefuseOnLoadError) and reports the error through
// HTTPConfig.Options.
package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/usecases/internal/keys"
	"github.com/tidekv/tide/usecases/store"
)

// Codec encodes session records. Implementations must be safe for
// concurrent use.
type Codec interface {
	Marshal(r *Record) ([]byte, error)
	Unmarshal(data []byte, r *Record) error
}

// JSON is the default Codec. Every string (user, tenant, authorization
// keys and values, value names) is encoded as bytes (base64 in JSON), so any
// byte string round-trips exactly, valid UTF-8 or not: two distinct tenants
// never load as the same one.
type JSON struct{}

type wireRecord struct {
	User       []byte      `json:"u"`
	Tenant     []byte      `json:"t,omitempty"`
	Auth       [][2][]byte `json:"a,omitempty"`
	Created    time.Time   `json:"c"`
	LastActive time.Time   `json:"l"`
	Deadline   time.Time   `json:"d"`
	Values     [][2][]byte `json:"v,omitempty"`
	Remember   bool        `json:"r,omitempty"`
}

// Marshal implements Codec.
func (JSON) Marshal(r *Record) ([]byte, error) {
	w := wireRecord{User: []byte(r.UserID), Tenant: []byte(r.Tenant), Created: r.Created, LastActive: r.LastActive, Deadline: r.Deadline, Remember: r.Remember}
	for _, k := range slices.Sorted(maps.Keys(r.Auth)) {
		w.Auth = append(w.Auth, [2][]byte{[]byte(k), []byte(r.Auth[k])})
	}
	for _, k := range slices.Sorted(maps.Keys(r.Values)) {
		w.Values = append(w.Values, [2][]byte{[]byte(k), r.Values[k]})
	}
	return json.Marshal(&w)
}

// Unmarshal implements Codec.
func (JSON) Unmarshal(data []byte, r *Record) error {
	var w wireRecord
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Record{UserID: string(w.User), Tenant: string(w.Tenant), Created: w.Created, LastActive: w.LastActive, Deadline: w.Deadline, Remember: w.Remember}
	if len(w.Auth) > 0 {
		r.Auth = make(map[string]string, len(w.Auth))
		for _, kv := range w.Auth {
			r.Auth[string(kv[0])] = string(kv[1])
		}
	}
	if len(w.Values) > 0 {
		r.Values = make(map[string][]byte, len(w.Values))
		for _, kv := range w.Values {
			r.Values[string(kv[0])] = kv[1]
		}
	}
	return nil
}

// Record is what the store holds for a session.
type Record struct {
	// UserID is the session's user; "" for an anonymous session.
	UserID     string            `json:"u"`
	Tenant     string            `json:"t,omitempty"`
	Auth       map[string]string `json:"a,omitempty"` // authorization context (roles, scopes, MFA level)
	Created    time.Time         `json:"c"`
	LastActive time.Time         `json:"l"`
	Deadline   time.Time         `json:"d"` // absolute; never moves
	Values     map[string][]byte `json:"v,omitempty"`
	// Remember marks a "remember me" session: RememberIdleTimeout
	// applies, and the middleware sets a persistent cookie.
	Remember bool `json:"r,omitempty"`
}

// Backend is what a Manager needs of a store: the primitives.
// store.Backend implementations (embedded, redisstore) satisfy it.
type Backend = store.Primitives

// Config configures a Manager.
type Config struct {
	// Backend holds the sessions. Required.
	Backend Backend
	// IdleTimeout ends a session after this long without activity. 0
	// means 30 minutes.
	IdleTimeout time.Duration
	// AbsoluteTimeout ends a session this long after creation, whatever
	// its activity. 0 means 24 hours. It must be ≥ IdleTimeout and at most
	// store.MaxTTL.
	AbsoluteTimeout time.Duration
	// RememberIdleTimeout is the idle timeout of sessions with
	// Record.Remember set. 0 means AbsoluteTimeout (a remembered session
	// lasts until its absolute deadline). It must lie between IdleTimeout
	// and AbsoluteTimeout.
	RememberIdleTimeout time.Duration
	// TouchInterval is the least time between two activity refreshes of a
	// session. 0 means IdleTimeout/10.
	TouchInterval time.Duration
	// Prefix is prepended to every key. "" means "tide:sess:". Every
	// adapter checks its Prefix by one rule, and New refuses a Prefix
	// that breaks it with ErrInvalidConfig: 1 to 128 bytes of printable
	// ASCII without space; no '{' (a Redis Cluster hash tag has no place
	// in a session's keys); and no overlap with another adapter's default
	// key space ("tide:flag:", "tide:rl:", "tide:idem:", "tide:lease:",
	// "tide:cache:") or the Redis backend's "tide:ver:": the Prefix is
	// neither a prefix of one nor begins with one ("tide:" is refused).
	// Managers and other adapters sharing a backend need prefixes neither
	// of which is a prefix of the other: a Manager's keys are Prefix + 64
	// hex digits (a record) and Prefix + "user:" + 64 hex digits (a user's
	// index), so Managers on "app:" and "app:user:" would share keys.
	Prefix string
	// Pin exempts sessions from eviction. Users' indexes are always
	// pinned (see "Eviction").
	Pin bool
	// MaxUserSessions bounds each user's sessions (and so the user's
	// index, one store value that every sign-in rewrites and DestroyAll
	// walks): 0 means DefaultMaxUserSessions; at most MaxMaxUserSessions.
	// A sign-in (Create, Login, Rotate) at the limit first drops the index
	// entries of sessions that are gone, then revokes the user's oldest
	// sessions to make room; see "Revocation".
	MaxUserSessions int
	// Codec encodes records. nil means JSON.
	Codec Codec
}

// Session is a loaded session. It is a snapshot: change it and Save it.
// It is not safe for concurrent mutation.
type Session struct {
	// ID is the secret session ID (the cookie value). The store keeps only
	// its hash.
	ID string
	// Record is the session's data. Its UserID is fixed at creation: Save
	// and Rotate refuse a changed one with ErrInvalidUser (a different
	// user needs a new session, and the per-user index must stay exact).
	// Its Created and Deadline are fixed too (the absolute deadline never
	// moves), and so is ID (a Session only ever writes its own record):
	// Save and Rotate refuse a change with ErrFixedField, and a Session
	// not returned by the Manager with ErrNotFound.
	Record
	version uint64
	user    string // the UserID the session was created (and indexed) with
	// the ID, Created and Deadline the session was loaded with
	id                string
	created, deadline time.Time
}

// fixed reports an error if s was not loaded or created by a Manager, or
// if its ID, user, creation time or deadline changed since.
func (s *Session) fixed() error {
	if s.version == 0 || s.id == "" {
		return ErrNotFound
	}
	if s.UserID != s.user {
		return fmt.Errorf("%w: a session's user cannot change (%q to %q)", ErrInvalidUser, s.user, s.UserID)
	}
	if s.ID != s.id || !s.Created.Equal(s.created) || !s.Deadline.Equal(s.deadline) {
		return fmt.Errorf("%w: a session's ID, creation time and absolute deadline cannot change", ErrFixedField)
	}
	return nil
}

// Version returns the store version the session was loaded or last saved
// at (the compare-and-swap token of its next Save).
func (s *Session) Version() uint64 { return s.version }

// Get returns the value stored under name.
func (s *Session) Get(name string) ([]byte, bool) {
	v, ok := s.Values[name]
	return v, ok
}

// Set stores value under name (copied). Call Save to persist.
func (s *Session) Set(name string, value []byte) {
	if s.Values == nil {
		s.Values = map[string][]byte{}
	}
	s.Values[name] = append([]byte(nil), value...)
}

// Delete removes the value under name. Call Save to persist.
func (s *Session) Delete(name string) { delete(s.Values, name) }

// Pop returns the value under name and deletes it: a flash message, shown
// once. Call Save to persist (the middleware does). Two requests of one
// session running at the same time may both see it.
func (s *Session) Pop(name string) ([]byte, bool) {
	v, ok := s.Values[name]
	if ok {
		delete(s.Values, name)
	}
	return v, ok
}

// PopString is Pop for a string value.
func (s *Session) PopString(name string) (string, bool) {
	v, ok := s.Pop(name)
	return string(v), ok
}

// SetString stores a string under name.
func (s *Session) SetString(name, value string) { s.Set(name, []byte(value)) }

// GetString returns the string under name; false if there is none.
func (s *Session) GetString(name string) (string, bool) {
	v, ok := s.Values[name]
	return string(v), ok
}

// SetInt stores an int under name, in decimal.
func (s *Session) SetInt(name string, value int) {
	s.Set(name, strconv.AppendInt(nil, int64(value), 10))
}

// GetInt returns the int under name; false if there is none or it is not
// a decimal int.
func (s *Session) GetInt(name string) (int, bool) {
	v, ok := s.Values[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(v))
	return n, err == nil
}

// SetBool stores a bool under name ("true" or "false").
func (s *Session) SetBool(name string, value bool) { s.Set(name, strconv.AppendBool(nil, value)) }

// GetBool returns the bool under name; false, false if there is none or it
// is not a bool.
func (s *Session) GetBool(name string) (value, ok bool) {
	v, ok := s.Values[name]
	if !ok {
		return false, false
	}
	b, err := strconv.ParseBool(string(v))
	return b, err == nil
}

// SetTime stores a time under name, as RFC 3339 with nanoseconds (the
// monotonic reading and the location's name are dropped; the offset is
// kept).
func (s *Session) SetTime(name string, value time.Time) {
	b, err := value.MarshalText()
	if err != nil { // a year outside [0, 9999]: store it as invalid
		b = nil
	}
	s.Set(name, b)
}

// GetTime returns the time under name; false if there is none or it is not
// an RFC 3339 time.
func (s *Session) GetTime(name string) (time.Time, bool) {
	v, ok := s.Values[name]
	if !ok {
		return time.Time{}, false
	}
	var t time.Time
	if err := t.UnmarshalText(v); err != nil {
		return time.Time{}, false
	}
	return t, true
}

// Info describes one of a user's live sessions, without its secret ID.
type Info struct {
	// Handle identifies the session (its key's hash) for DestroyHandle.
	Handle     string
	Tenant     string
	Created    time.Time
	LastActive time.Time
	Deadline   time.Time
}

// Manager creates, loads, saves and revokes sessions. Create it with New;
// its zero value is not usable. It is safe for concurrent use; its only
// state is its event counters (Events). Cost: Load is one Get (plus one
// CAS when a touch is due); Save one CAS; Create and Destroy of a user's
// session also update the user's index (a Get and a CAS; at the
// MaxUserSessions limit, a Create also reads the oldest entries' records
// until it has made room, usually one).
type Manager struct {
	cfg Config
	// Event counters, for Events.
	created, revoked, rotated, evicted atomic.Uint64
}

// Events reports the Manager's cumulative event counts: "created"
// (sessions started by Create, CreateAnonymous and Login), "revoked"
// (sessions ended by Destroy, DestroyHandle, DestroyAll and Login),
// "rotated" (Rotate) and "evicted" (sessions revoked to keep a user within
// Config.MaxUserSessions). It makes a Manager an EventSource for
// contrib/prometheus and expvarstats.
func (m *Manager) Events() iter.Seq2[string, uint64] {
	return func(yield func(string, uint64) bool) {
		_ = yield("created", m.created.Load()) && yield("revoked", m.revoked.Load()) && yield("rotated", m.rotated.Load()) &&
			yield("evicted", m.evicted.Load())
	}
}

const defaultPrefix = keys.SessionPrefix

// DefaultMaxUserSessions is the default Config.MaxUserSessions.
const DefaultMaxUserSessions = 100

// MaxMaxUserSessions is the largest Config.MaxUserSessions New accepts.
const MaxMaxUserSessions = 10000

// New returns a Manager for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Manager, error) {
	if cfg.Backend == nil {
		return nil, fmt.Errorf("%w: Backend is nil", ErrInvalidConfig)
	}
	if cfg.IdleTimeout < 0 || cfg.AbsoluteTimeout < 0 || cfg.TouchInterval < 0 {
		return nil, fmt.Errorf("%w: timeouts must be ≥ 0", ErrInvalidConfig)
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.AbsoluteTimeout == 0 {
		cfg.AbsoluteTimeout = 24 * time.Hour
	}
	if cfg.AbsoluteTimeout > store.MaxTTL {
		return nil, fmt.Errorf("%w: AbsoluteTimeout %v exceeds %v", ErrInvalidConfig, cfg.AbsoluteTimeout, store.MaxTTL)
	}
	if cfg.AbsoluteTimeout < cfg.IdleTimeout {
		return nil, fmt.Errorf("%w: AbsoluteTimeout %v < IdleTimeout %v", ErrInvalidConfig, cfg.AbsoluteTimeout, cfg.IdleTimeout)
	}
	if cfg.RememberIdleTimeout < 0 {
		return nil, fmt.Errorf("%w: RememberIdleTimeout must be ≥ 0", ErrInvalidConfig)
	}
	if cfg.RememberIdleTimeout == 0 {
		cfg.RememberIdleTimeout = cfg.AbsoluteTimeout
	}
	if cfg.RememberIdleTimeout < cfg.IdleTimeout || cfg.RememberIdleTimeout > cfg.AbsoluteTimeout {
		return nil, fmt.Errorf("%w: RememberIdleTimeout %v outside [IdleTimeout %v, AbsoluteTimeout %v]", ErrInvalidConfig, cfg.RememberIdleTimeout, cfg.IdleTimeout, cfg.AbsoluteTimeout)
	}
	if cfg.TouchInterval == 0 {
		cfg.TouchInterval = cfg.IdleTimeout / 10
	}
	if cfg.TouchInterval >= cfg.IdleTimeout {
		return nil, fmt.Errorf("%w: TouchInterval %v ≥ IdleTimeout %v", ErrInvalidConfig, cfg.TouchInterval, cfg.IdleTimeout)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = defaultPrefix
	}
	if err := keys.CheckPrefix(cfg.Prefix, defaultPrefix); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if cfg.Codec == nil {
		cfg.Codec = JSON{}
	}
	if cfg.MaxUserSessions < 0 || cfg.MaxUserSessions > MaxMaxUserSessions {
		return nil, fmt.Errorf("%w: MaxUserSessions = %d, want 0..%d", ErrInvalidConfig, cfg.MaxUserSessions, MaxMaxUserSessions)
	}
	if cfg.MaxUserSessions == 0 {
		cfg.MaxUserSessions = DefaultMaxUserSessions
	}
	return &Manager{cfg: cfg}, nil
}

// cleanupTimeout bounds the writes that undo or complete a half-done
// operation after the caller's context ended.
const cleanupTimeout = 10 * time.Second

// idBytes is the session ID's entropy: 256 bits.
const idBytes = 32

var idLen = base64.RawURLEncoding.EncodedLen(idBytes)

func newID() string {
	var b [idBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// handle is the hash of an ID, hex.
func handle(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

func (m *Manager) key(h string) string { return m.cfg.Prefix + h }

// validHandle reports whether h has the form of a handle: 64 lowercase hex
// digits.
func validHandle(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := range len(h) {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil
}

// ttl is the store TTL of a record at now: min(idle, until deadline).
func (m *Manager) ttl(r *Record, now time.Time) time.Duration {
	idle := m.cfg.IdleTimeout
	if r.Remember {
		idle = m.cfg.RememberIdleTimeout
	}
	return min(idle, r.Deadline.Sub(now))
}

// Create starts a session for userID and returns it with a fresh ID.
func (m *Manager) Create(ctx context.Context, userID, tenant string, auth map[string]string) (*Session, error) {
	if userID == "" {
		return nil, ErrInvalidUser
	}
	now, err := m.cfg.Backend.Now(ctx)
	if err != nil {
		return nil, err
	}
	s := &Session{Record: Record{UserID: userID, Tenant: tenant, Auth: maps.Clone(auth),
		Created: now, LastActive: now, Deadline: now.Add(m.cfg.AbsoluteTimeout)}, user: userID}
	if err := m.insert(ctx, s, now, ""); err != nil {
		return nil, err
	}
	m.created.Add(1)
	return s, nil
}

// CreateAnonymous starts a session without a user (a visitor's cart, a
// CSRF token, flash messages) and returns it with a fresh ID. Login turns
// it into a user's session. Anonymous sessions are in no user's index.
func (m *Manager) CreateAnonymous(ctx context.Context) (*Session, error) {
	now, err := m.cfg.Backend.Now(ctx)
	if err != nil {
		return nil, err
	}
	s := &Session{Record: Record{Created: now, LastActive: now, Deadline: now.Add(m.cfg.AbsoluteTimeout)}}
	if err := m.insert(ctx, s, now, ""); err != nil {
		return nil, err
	}
	m.created.Add(1)
	return s, nil
}

// Login starts a session for userID under a fresh ID and revokes prev (the
// request's current session, or nil). If prev is anonymous, its values
// and Remember flag carry over to the new session; a user's session
// carries nothing over. Either way prev's ID is unusable once Login
// returns: this is the defence against session fixation (an attacker who
// planted an ID before login holds a revoked one). If prev cannot be
// revoked, the new session is removed again and Login fails.
func (m *Manager) Login(ctx context.Context, prev *Session, userID, tenant string, auth map[string]string) (*Session, error) {
	if userID == "" {
		return nil, ErrInvalidUser
	}
	now, err := m.cfg.Backend.Now(ctx)
	if err != nil {
		return nil, err
	}
	s := &Session{Record: Record{UserID: userID, Tenant: tenant, Auth: maps.Clone(auth),
		Created: now, LastActive: now, Deadline: now.Add(m.cfg.AbsoluteTimeout)}, user: userID}
	if prev != nil && prev.user == "" {
		s.Remember = prev.Remember
		for k, v := range prev.Values {
			s.Set(k, v)
		}
	}
	// A re-login replaces the user's session: it does not count against
	// MaxUserSessions (it is revoked below).
	replacing := ""
	if prev != nil && prev.user == userID && validID(prev.ID) {
		replacing = handle(prev.ID)
	}
	if err := m.insert(ctx, s, now, replacing); err != nil {
		return nil, err
	}
	m.created.Add(1)
	if prev == nil || !validID(prev.ID) {
		return s, nil
	}
	if _, err := m.Destroy(ctx, prev.ID); err != nil {
		// The old ID may still work: do not hand out a session beside it.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_, derr := m.Destroy(dctx, s.ID)
		return nil, errors.Join(err, derr)
	}
	return s, nil
}

// insert writes s under a fresh ID and indexes it; replacing is the handle
// of a session of the same user the caller revokes next, or "" (see
// indexAdd).
func (m *Manager) insert(ctx context.Context, s *Session, now time.Time, replacing string) error {
	ttl := m.ttl(&s.Record, now)
	if ttl <= 0 {
		return ErrNotFound
	}
	enc, err := m.cfg.Codec.Marshal(&s.Record)
	if err != nil {
		return err
	}
	// Index first: a session missing from its user's index would escape
	// DestroyAll; an index entry without a session is pruned later.
	// Anonymous sessions have no index.
	for {
		id := newID()
		h := handle(id)
		if err := m.indexAdd(ctx, s.UserID, h, s.Deadline, replacing); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			// The caller gave up (a client hung up): no record will be
			// written under h, so its entry goes, or it would pass for a
			// sign-in in flight for pendingGrace and count against
			// MaxUserSessions (a few hang-ups would lock the user out).
			// Once the record's write is sent it stays: the write may
			// land.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			return errors.Join(err, m.indexRemove(dctx, s.UserID, h))
		}
		v, ok, err := m.cfg.Backend.Set(ctx, m.key(h), enc, store.SetOptions{IfAbsent: true, TTL: ttl, Pin: m.cfg.Pin})
		if err != nil {
			return err
		}
		if ok {
			s.ID, s.id, s.version = id, id, v
			s.created, s.deadline = s.Created, s.Deadline
			return nil
		}
		// A 256-bit collision: try another ID.
	}
}

// Load returns the session with ID id, or ok = false if there is none
// (unknown, malformed, expired or revoked: all look the same). It
// refreshes the idle timer if TouchInterval has passed since the last
// refresh.
func (m *Manager) Load(ctx context.Context, id string) (*Session, bool, error) {
	s, ok, err := m.get(ctx, id)
	if !ok || err != nil {
		return nil, false, err
	}
	if _, err := m.Touch(ctx, s); err != nil && !errors.Is(err, ErrConflict) {
		if errors.Is(err, ErrNotFound) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return s, true, nil
}

func (m *Manager) get(ctx context.Context, id string) (*Session, bool, error) {
	if !validID(id) {
		return nil, false, nil
	}
	it, ok, err := m.cfg.Backend.Get(ctx, m.key(handle(id)))
	if !ok || err != nil {
		return nil, false, err
	}
	s := &Session{ID: id, id: id, version: it.Version}
	if err := m.cfg.Codec.Unmarshal(it.Value, &s.Record); err != nil {
		return nil, false, fmt.Errorf("%w: session record: %v", store.ErrCorrupt, err)
	}
	s.user, s.created, s.deadline = s.UserID, s.Created, s.Deadline
	return s, true, nil
}

// Touch refreshes s's idle timer if TouchInterval has passed since its
// last activity, and reports whether it wrote. A lost race is ErrConflict
// (s is then stale; the winner refreshed the session).
func (m *Manager) Touch(ctx context.Context, s *Session) (bool, error) {
	if s == nil || !validID(s.ID) {
		return false, ErrNotFound
	}
	now, err := m.cfg.Backend.Now(ctx)
	if err != nil {
		return false, err
	}
	if now.Sub(s.LastActive) < m.cfg.TouchInterval {
		return false, nil
	}
	prev := s.LastActive
	s.LastActive = now
	if err := m.write(ctx, s, now); err != nil {
		s.LastActive = prev
		return false, err
	}
	return true, nil
}

// write CASes s at its version with the capped sliding TTL.
func (m *Manager) write(ctx context.Context, s *Session, now time.Time) error {
	if err := s.fixed(); err != nil {
		return err
	}
	ttl := m.ttl(&s.Record, now)
	if ttl <= 0 {
		return ErrNotFound
	}
	enc, err := m.cfg.Codec.Marshal(&s.Record)
	if err != nil {
		return err
	}
	v, ok, err := m.cfg.Backend.Set(ctx, m.key(handle(s.ID)), enc, store.SetOptions{IfVersion: s.version, TTL: ttl, Pin: m.cfg.Pin})
	if err != nil {
		return err
	}
	if !ok {
		if _, live, err := m.cfg.Backend.Get(ctx, m.key(handle(s.ID))); err == nil && !live {
			return ErrNotFound
		}
		return ErrConflict
	}
	s.version = v
	return nil
}

// Save writes s back if it has not changed in the store since it was
// loaded (else ErrConflict; ErrNotFound if it is gone). Saving counts as
// activity.
func (m *Manager) Save(ctx context.Context, s *Session) error {
	if s == nil || !validID(s.ID) {
		return ErrNotFound
	}
	now, err := m.cfg.Backend.Now(ctx)
	if err != nil {
		return err
	}
	prev := s.LastActive
	s.LastActive = now
	if err := m.write(ctx, s, now); err != nil {
		s.LastActive = prev
		return err
	}
	return nil
}

// Update loads the session id, applies fn, and saves it, reloading and
// reapplying fn on conflict. It returns ErrNotFound if there is no such
// session, or fn's error (nothing saved).
func (m *Manager) Update(ctx context.Context, id string, fn func(*Session) error) (*Session, error) {
	for {
		s, ok, err := m.get(ctx, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNotFound
		}
		if err := fn(s); err != nil {
			return nil, err
		}
		switch err := m.Save(ctx, s); {
		case err == nil:
			return s, nil
		case !errors.Is(err, ErrConflict):
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Rotate gives s a new ID, keeping everything else (the absolute deadline
// included), and revokes the old ID. Do it on login and on any privilege
// change. A concurrent change to s is ErrConflict (nothing changed).
func (m *Manager) Rotate(ctx context.Context, s *Session) error {
	if s == nil || !validID(s.ID) {
		return ErrNotFound
	}
	now, err := m.cfg.Backend.Now(ctx)
	if err != nil {
		return err
	}
	if err := s.fixed(); err != nil {
		return err
	}
	old, oldVersion := s.ID, s.version
	ns := &Session{Record: s.Record, user: s.user}
	ns.LastActive = now
	if err := m.insert(ctx, ns, now, handle(old)); err != nil {
		return err
	}
	deleted, err := m.cfg.Backend.CompareAndDelete(ctx, m.key(handle(old)), oldVersion)
	// The new record exists: undo it, or unindex the old one, even if the
	// caller has given up meanwhile.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err != nil || !deleted {
		_, derr := m.cfg.Backend.Delete(dctx, m.key(handle(ns.ID)))
		if derr == nil {
			derr = m.indexRemove(dctx, s.UserID, handle(ns.ID))
		}
		if err != nil {
			return errors.Join(err, derr)
		}
		return errors.Join(ErrConflict, derr)
	}
	// An index entry left behind is pruned by List or at its deadline.
	m.indexRemove(dctx, s.UserID, handle(old))
	*s = *ns
	m.rotated.Add(1)
	return nil
}

// Destroy revokes the session with ID id and reports whether it existed.
// A record the Codec cannot decode is deleted too (its index entry, if
// any, is pruned by List or DestroyAll, or leaves at its deadline).
func (m *Manager) Destroy(ctx context.Context, id string) (bool, error) {
	if !validID(id) {
		return false, nil
	}
	h := handle(id)
	it, ok, err := m.cfg.Backend.Get(ctx, m.key(h))
	if !ok || err != nil {
		return false, err
	}
	var r Record
	decoded := m.cfg.Codec.Unmarshal(it.Value, &r) == nil
	deleted, err := m.cfg.Backend.Delete(ctx, m.key(h))
	if err != nil {
		return false, err
	}
	if deleted {
		m.revoked.Add(1)
	}
	if !decoded {
		return deleted, nil
	}
	if err := m.indexRemove(ctx, r.UserID, h); err != nil {
		return deleted, err
	}
	return deleted, nil
}

// DestroyHandle revokes userID's session identified by an Info.Handle (for
// a "sign out that device" page) and reports whether it did. The handle
// comes from the client, so it is authenticated: it must have the form of a
// handle and name a live session of userID; anything else (another user's
// session, the user index, a malformed string) destroys nothing and
// reports false.
func (m *Manager) DestroyHandle(ctx context.Context, userID, h string) (bool, error) {
	if !validHandle(h) || userID == "" {
		return false, nil
	}
	for {
		it, ok, err := m.cfg.Backend.Get(ctx, m.key(h))
		if err != nil || !ok {
			return false, err
		}
		var r Record
		if m.cfg.Codec.Unmarshal(it.Value, &r) != nil || r.UserID != userID {
			return false, nil
		}
		deleted, err := m.cfg.Backend.CompareAndDelete(ctx, m.key(h), it.Version)
		if err != nil {
			return false, err
		}
		if deleted {
			m.revoked.Add(1)
			return true, m.indexRemove(ctx, userID, h)
		}
		// Touched or saved meanwhile: check again.
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
}

// DestroyAll revokes every session of userID and returns how many were
// live. It reads the user's index, not the keyspace. It revokes every
// session whose Create returned before DestroyAll began; a Create running
// concurrently may survive it, but never a later DestroyAll (its index
// entry, written before its record, is kept until its record is gone), so
// block the sign-in path first (change the password), then DestroyAll.
func (m *Manager) DestroyAll(ctx context.Context, userID string) (int, error) {
	idx, _, err := m.readIndex(ctx, userID)
	if err != nil {
		return 0, err
	}
	var gone []string
	for _, e := range idx {
		d, err := m.cfg.Backend.Delete(ctx, m.key(e.Handle))
		if err != nil {
			if len(gone) > 0 {
				err = errors.Join(err, m.indexRemove(ctx, userID, gone...))
			}
			return len(gone), err
		}
		if d {
			m.revoked.Add(1)
			gone = append(gone, e.Handle)
		}
		// An entry without a record is either dead or a Create in flight
		// whose record is about to be written: it stays, so the next
		// DestroyAll revokes that record. Dead entries leave the index at
		// their deadline, or through List once they are old enough.
	}
	if len(gone) == 0 {
		return 0, nil
	}
	return len(gone), m.indexRemove(ctx, userID, gone...)
}

// List returns userID's live sessions, oldest first, and prunes the index
// of dead ones: entries whose record is gone and that were added more than
// pendingGrace ago (a younger one may be a Create in flight, whose record
// is about to be written). A record the Codec cannot decode is not listed
// and its entry stays (DestroyAll revokes it).
func (m *Manager) List(ctx context.Context, userID string) ([]Info, error) {
	idx, _, err := m.readIndex(ctx, userID)
	if err != nil {
		return nil, err
	}
	now, err := m.cfg.Backend.Now(ctx)
	if err != nil {
		return nil, err
	}
	var out []Info
	var dead []string
	for _, e := range idx {
		it, ok, err := m.cfg.Backend.Get(ctx, m.key(e.Handle))
		if err != nil {
			return nil, err
		}
		var r Record
		if !ok {
			if now.Sub(e.Added) > pendingGrace {
				dead = append(dead, e.Handle)
			}
			continue
		}
		if err := m.cfg.Codec.Unmarshal(it.Value, &r); err != nil {
			// Not listable, but not dead either: another Codec's record
			// (before a change of Codec) stays indexed, so that
			// DestroyAll still revokes it.
			continue
		}
		if r.UserID != userID {
			dead = append(dead, e.Handle)
			continue
		}
		out = append(out, Info{Handle: e.Handle, Tenant: r.Tenant, Created: r.Created, LastActive: r.LastActive, Deadline: r.Deadline})
	}
	if len(dead) > 0 {
		if err := m.indexRemove(ctx, userID, dead...); err != nil {
			return out, err
		}
	}
	return out, nil
}
