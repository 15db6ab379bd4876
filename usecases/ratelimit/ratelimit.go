// Package ratelimit limits the rate of events per key (a user, an API
// token, an organisation) with the state held in a store.Backend, so that
// every process sharing the backend shares the limit.
//
// # Algorithms
//
//   - TokenBucket: a bucket of Burst tokens refilled at Limit per Period,
//     computed in GCRA form (one timestamp per key; see store.TokenBucket).
//     Smooth; allows bursts up to Burst. Over any span T it admits at most
//     Burst + T·Limit/Period.
//   - FixedWindow: at most Limit per window of Period. The window starts at
//     the first admitted event and its key expires with it: the expiry is
//     set only by the write that creates the counter, never extended. Cheap
//     (one integer), but up to 2×Limit can pass around a window boundary.
//   - SlidingWindow: at most Limit in any span of Period, exactly (a log of
//     admission times; O(Limit) memory per key, Limit ≤ 65536).
//
// Every decision (read state, decide, write) is one atomic step in the
// store, so N goroutines or N processes hammering one key never admit more
// than the limit, and a denied request changes no state.
//
// # TTL kind
//
// Absolute. Each key's TTL is the time until its state is irrelevant (the
// bucket is full again, the window ended, the newest logged event left the
// window); a missing key means "no recent events".
//
// # Eviction
//
// Keys are not pinned. Evicting one forgets recent events: the key is
// treated as fresh and may admit up to a full burst again. Size the store
// so that live limiter keys are not evicted, or accept that bound.
//
// # Keys
//
// Every limiter has a Name, and its store keys carry the name and the
// algorithm: two limiters on one backend (an API limit and a login limit,
// both keyed by client IP) never share state, while replicas of one
// service, configured alike, share one limit. Should a key still hold
// another algorithm's state (a Prefix shared by hand), Allow reports an
// error wrapping store.ErrCorrupt, never a wrong answer.
//
// # Store failure
//
// The caller chooses, explicitly, in Config.OnStoreError: FailClosed (the
// zero value: deny, the safe choice for budgets such as SMS spend) or
// FailOpen (allow: availability first). Either way Allow also returns an
// error wrapping ErrStore, Result.Degraded is set, and the failure is
// reported to Config.Logger and Config.OnError with the key (an IP as it
// is, any other key hashed: it may be a token) and the decision taken.
// FailOpen covers availability failures only. A request the store refuses
// as invalid (a key longer than it accepts) is handled alike but always
// denied: its caller chose it, so failing open would let anyone escape the
// limit. So is a key whose record the store reports unreadable
// (store.ErrCorrupt: tampered with, or another program's value at the
// key): that is an integrity failure, and failing open would give whoever
// can spoil a record unlimited requests. Such a key is denied until its
// record is deleted (Limiter.Reset) or expires.
//
// # Several processes
//
// A Limiter on a per-process backend (the embedded engine) limits that
// process only: N replicas admit up to N×Limit. A Limiter on a shared
// backend (Redis) holds the limit across replicas. The demo in
// cmd/atlasmart shows both.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/usecases/internal/keys"
	"github.com/tidekv/tide/usecases/internal/report"
	"github.com/tidekv/tide/usecases/store"
)

// Algorithm selects how a Limiter counts.
type Algorithm uint8

const (
	// TokenBucket is the default. It is computed as the generic cell rate
	// algorithm (GCRA: one "theoretical arrival time" per key), which
	// gives the same limit as a bucket of tokens.
	TokenBucket Algorithm = iota
	// FixedWindow counts per window of Period starting at the first event.
	FixedWindow
	// SlidingWindow counts exactly over the last Period.
	SlidingWindow
)

func (a Algorithm) String() string {
	switch a {
	case TokenBucket:
		return "token bucket"
	case FixedWindow:
		return "fixed window"
	case SlidingWindow:
		return "sliding window"
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// FailureMode is what a Limiter answers when the store fails.
type FailureMode uint8

const (
	// FailClosed denies when the store fails (the zero value).
	FailClosed FailureMode = iota
	// FailOpen allows when the store is unavailable. It never allows a
	// request the store refused as invalid, or one whose record the store
	// reports corrupt (store.ErrCorrupt): see "Store failure".
	FailOpen
)

// Backend is what a Limiter needs of a store: its three decisions and
// Delete. store.Backend implementations (embedded, redisstore) satisfy it.
type Backend interface {
	TokenBucket(ctx context.Context, d *store.TokenBucket) error
	FixedWindow(ctx context.Context, d *store.FixedWindow) error
	SlidingWindow(ctx context.Context, d *store.SlidingWindow) error
	Delete(ctx context.Context, key string) (bool, error)
}

// Config configures a Limiter. Zero fields mean defaults where one is
// stated.
type Config struct {
	// Backend holds the limiter state. Required.
	Backend Backend
	// Algorithm is the counting algorithm. The zero value is TokenBucket.
	Algorithm Algorithm
	// Limit is the number of events per Period. Required (≥ 1). A fixed
	// window counts at most MaxLimit, a sliding window at most
	// store.MaxSlidingLimit.
	Limit int64
	// Period is the span Limit applies to. Required (> 0, at most
	// store.MaxTTL). For a token
	// bucket, Period/Limit is the time to refill one token and must be at
	// least 1 ns.
	Period time.Duration
	// Burst is the token bucket's capacity. 0 means Limit. Ignored by the
	// window algorithms. Burst × the refill interval (Period/Limit),
	// rounded up to whole microseconds, must be at most store.MaxTTL: the
	// bucket's state lives that long, and a backend may count time in
	// microseconds (Redis does).
	Burst int64
	// Name names the limit ("api", "login"). Required: 1 to 64 bytes of
	// letters, digits, '.', '_' and '-'. It and the algorithm are part of
	// every store key, so that two limiters on one backend never share
	// state unless they have the same name and algorithm (as replicas of
	// one service do).
	Name string
	// Prefix is prepended to every key. "" means "tide:rl:". Every
	// adapter checks its Prefix by one rule, and New refuses a Prefix
	// that breaks it with ErrInvalidConfig: 1 to 128 bytes of printable
	// ASCII without space; no '{', so that the caller's key is the Redis
	// Cluster hash tag (see Limiter.Key) and keys spread over a cluster's
	// slots; and no overlap with another adapter's default key space
	// ("tide:sess:", "tide:flag:", "tide:idem:", "tide:lease:",
	// "tide:cache:") or the Redis backend's "tide:ver:": the Prefix is
	// neither a prefix of one nor begins with one ("tide:" is refused).
	// Adapters sharing a backend need prefixes neither of which is a
	// prefix of the other.
	Prefix string
	// OnStoreError chooses the answer when the store fails. The zero value
	// is FailClosed.
	OnStoreError FailureMode
	// Logger receives a record for every store failure (with the key, the
	// cause and whether the event was allowed). nil means none.
	Logger *slog.Logger
	// OnError, if set, is called with every store failure after it is
	// logged, with the key in the form logged. It must be safe for
	// concurrent use and should not block.
	OnError func(ctx context.Context, key string, err error)
}

// MaxLimit is the largest fixed window Limit: 2^52, the largest count
// every backend computes exactly (Redis's scripts count in doubles, and
// refuse a larger limit at every call).
const MaxLimit = 1 << 52

// Result is the outcome of one Allow.
type Result struct {
	// Allowed reports whether the event is admitted.
	Allowed bool
	// Limit is the configured limit (the burst for a token bucket).
	Limit int64
	// Remaining is how many more unit events would be admitted now.
	Remaining int64
	// RetryAfter is, when denied, the wait until the same request could be
	// admitted (0 when allowed).
	RetryAfter time.Duration
	// Reset is the time until the limiter is back to its full allowance
	// (bucket full, window over).
	Reset time.Duration
	// Degraded reports that the store failed and Allowed was chosen by
	// Config.OnStoreError (or is false: the store refused the request as
	// invalid, or reported the key's record corrupt; see AllowN).
	Degraded bool
}

// Limiter is a rate limiter over a store.Backend. It is safe for concurrent
// use and keeps no state of its own: every Allow is one atomic decision in
// the store (one round trip on a remote backend). Its zero value is not
// usable; create it with New.
type Limiter struct {
	cfg      Config
	interval time.Duration
	rep      report.Reporter
	// Event counters (see Events).
	allowed, denied, storeErrors atomic.Uint64
	// afterFunc, if set, replaces time.After in WaitN (tests).
	afterFunc func(time.Duration) <-chan time.Time
}

const defaultPrefix = keys.RateLimitPrefix

// New returns a Limiter for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Limiter, error) {
	switch {
	case cfg.Backend == nil:
		return nil, fmt.Errorf("%w: Backend is nil", ErrInvalidConfig)
	case cfg.Algorithm > SlidingWindow:
		return nil, fmt.Errorf("%w: Algorithm = %d", ErrInvalidConfig, cfg.Algorithm)
	case cfg.Limit < 1:
		return nil, fmt.Errorf("%w: Limit = %d, want ≥ 1", ErrInvalidConfig, cfg.Limit)
	case cfg.Period <= 0 || cfg.Period > store.MaxTTL:
		return nil, fmt.Errorf("%w: Period = %v, want 0 < Period ≤ %v", ErrInvalidConfig, cfg.Period, store.MaxTTL)
	case cfg.Burst < 0:
		return nil, fmt.Errorf("%w: Burst = %d, want ≥ 0", ErrInvalidConfig, cfg.Burst)
	case cfg.OnStoreError > FailOpen:
		return nil, fmt.Errorf("%w: OnStoreError = %d", ErrInvalidConfig, cfg.OnStoreError)
	case !keys.ValidName(cfg.Name):
		return nil, fmt.Errorf("%w: Name = %q, want 1 to 64 bytes of [A-Za-z0-9._-]", ErrInvalidConfig, cfg.Name)
	case cfg.Algorithm == SlidingWindow && cfg.Limit > store.MaxSlidingLimit:
		return nil, fmt.Errorf("%w: Limit = %d, a sliding window allows at most %d", ErrInvalidConfig, cfg.Limit, store.MaxSlidingLimit)
	case cfg.Algorithm == FixedWindow && cfg.Limit > MaxLimit:
		return nil, fmt.Errorf("%w: Limit = %d, a fixed window allows at most %d", ErrInvalidConfig, cfg.Limit, int64(MaxLimit))
	}
	if cfg.Burst == 0 {
		cfg.Burst = cfg.Limit
	}
	if cfg.Prefix == "" {
		cfg.Prefix = defaultPrefix
	}
	if err := keys.CheckPrefix(cfg.Prefix, defaultPrefix); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	l := &Limiter{cfg: cfg, rep: report.Reporter{Logger: cfg.Logger, OnError: cfg.OnError}}
	if cfg.Algorithm == TokenBucket {
		l.interval = cfg.Period / time.Duration(cfg.Limit)
		if l.interval <= 0 {
			return nil, fmt.Errorf("%w: Period/Limit = %v/%d is below 1ns", ErrInvalidConfig, cfg.Period, cfg.Limit)
		}
		// The state's TTL reaches Burst × interval, and a backend may
		// count the interval in whole microseconds (Redis does; its
		// scripts then compute Burst × interval in doubles, exact below
		// 2^53 µs, which MaxTTL is).
		us := int64((l.interval + time.Microsecond - 1) / time.Microsecond)
		if cfg.Burst > int64(store.MaxTTL/time.Microsecond)/us {
			return nil, fmt.Errorf("%w: Burst × refill interval (%d × %v, rounded up to whole microseconds) exceeds %v", ErrInvalidConfig, cfg.Burst, l.interval, store.MaxTTL)
		}
	}
	return l, nil
}

// algTags name the algorithm in store keys.
var algTags = [...]string{TokenBucket: "tb", FixedWindow: "fw", SlidingWindow: "sw"}

// Key returns the store key the limiter uses for key:
//
//	Prefix + Name + ":" + algorithm + ":{k:" + key + "}"        (key ≤ 256 bytes)
//	Prefix + Name + ":" + algorithm + ":{h:" + hex(SHA-256(key)) + "}"
//
// The braces make the caller's part a Redis Cluster hash tag. A key over
// 256 bytes (from a header an attacker controls) is hashed, so it is
// limited like any other instead of failing in the store, where a FailOpen
// limiter would admit it; the "k:" and "h:" marks keep a hashed long key
// from ever equalling a short one.
func (l *Limiter) Key(key string) string {
	return l.cfg.Prefix + l.cfg.Name + ":" + algTags[l.cfg.Algorithm] + ":{" + keys.Caller(key) + "}"
}

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Result, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN decides whether n events for key are admitted now, and records
// them if so. n = 0 inspects without recording. A denied request changes
// nothing. n < 0 or n > the limit (burst) is ErrInvalidCost. If the store
// fails, the Result is chosen by Config.OnStoreError and the error wraps
// ErrStore. If ctx ends before the store answers (a client that went
// away), the events are not admitted, the error is ctx's cause, and it is
// neither reported nor counted as a store failure. A request the store
// refuses as invalid (its key longer than the store accepts, say: the
// caller chose it), or whose record the store cannot read (store.ErrCorrupt:
// an integrity failure, not an availability one), is denied even by a
// FailOpen limiter, and otherwise handled as a store failure: the error
// wraps ErrStore and the store's reason (store.ErrKeyTooLarge,
// store.ErrInvalidArgument, store.ErrCorrupt).
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Result, error) {
	limit := l.cfg.Limit
	if l.cfg.Algorithm == TokenBucket {
		limit = l.cfg.Burst
	}
	if n < 0 || n > limit {
		return Result{Limit: limit}, fmt.Errorf("%w: %d (limit %d)", ErrInvalidCost, n, limit)
	}
	k := l.Key(key)
	var r Result
	var err error
	switch l.cfg.Algorithm {
	case TokenBucket:
		d := &store.TokenBucket{Key: k, Capacity: l.cfg.Burst, Interval: l.interval, Cost: n}
		err = l.cfg.Backend.TokenBucket(ctx, d)
		r = Result{Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter, Reset: d.Reset}
	case FixedWindow:
		d := &store.FixedWindow{Key: k, Limit: l.cfg.Limit, Window: l.cfg.Period, Cost: n}
		err = l.cfg.Backend.FixedWindow(ctx, d)
		r = Result{Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter, Reset: d.Reset}
	case SlidingWindow:
		d := &store.SlidingWindow{Key: k, Limit: l.cfg.Limit, Window: l.cfg.Period, Cost: n}
		err = l.cfg.Backend.SlidingWindow(ctx, d)
		r = Result{Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter, Reset: d.Reset}
	}
	r.Limit = limit
	if err != nil && ctx.Err() != nil {
		return Result{Limit: limit}, context.Cause(ctx)
	}
	if err != nil {
		corrupt := errors.Is(err, store.ErrCorrupt)
		refused := corrupt || errors.Is(err, store.ErrKeyTooLarge) || errors.Is(err, store.ErrInvalidArgument)
		err = fmt.Errorf("%w: %w", ErrStore, err)
		r = l.degraded(limit, refused)
		msg := "tide: rate limit store failed; event denied (fail closed)"
		switch {
		case corrupt:
			msg = "tide: rate limit record is corrupt; event denied until it is reset or expires"
		case refused:
			msg = "tide: rate limit store refused the request; event denied"
		case r.Allowed:
			msg = "tide: rate limit store failed; event allowed (fail open)"
		}
		l.rep.Report(ctx, slog.LevelWarn, msg, report.Key(key), err, slog.String("limiter", l.cfg.Name), slog.Int64("cost", n))
		l.storeErrors.Add(1)
		return r, err
	}
	if r.Allowed {
		l.allowed.Add(1)
	} else {
		l.denied.Add(1)
	}
	return r, nil
}

// Events reports the limiter's decisions since New by name: "allowed",
// "denied" (over the limit) and "store_error" (the backend failed; the
// event was then allowed or denied by Config.OnStoreError). It makes a
// Limiter an EventSource for contrib/prometheus and expvarstats. The
// counts are cumulative and each is read atomically.
func (l *Limiter) Events() iter.Seq2[string, uint64] {
	return func(yield func(string, uint64) bool) {
		_ = yield("allowed", l.allowed.Load()) && yield("denied", l.denied.Load()) &&
			yield("store_error", l.storeErrors.Load())
	}
}

// logAttrs are the attributes the middleware reports with: the key in a
// form safe to log and the limiter's name.
func (l *Limiter) logAttrs(key string) []slog.Attr {
	return []slog.Attr{slog.String("key", report.Key(key)), slog.String("limiter", l.cfg.Name)}
}

// degraded is the Result of a decision the store did not make: the one
// Config.OnStoreError chooses, or a denial for a request the store refused
// as invalid or found corrupt (refused: failing open would admit whoever
// chose the key or spoiled its record).
func (l *Limiter) degraded(limit int64, refused bool) Result {
	r := Result{Limit: limit, Degraded: true}
	if l.cfg.OnStoreError == FailOpen && !refused {
		r.Allowed = true
	} else {
		r.RetryAfter = time.Second
	}
	return r
}

// Reset forgets key's recent events. A store failure is returned wrapping
// ErrStore and reported; if ctx ends first, ctx's cause is returned and
// nothing is reported.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if _, err := l.cfg.Backend.Delete(ctx, l.Key(key)); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		err = fmt.Errorf("%w: %w", ErrStore, err)
		l.rep.Report(ctx, slog.LevelWarn, "tide: rate limit reset failed", report.Key(key), err, slog.String("limiter", l.cfg.Name))
		return err
	}
	return nil
}

// Config returns the limiter's configuration with defaults filled in.
func (l *Limiter) Config() Config { return l.cfg }
