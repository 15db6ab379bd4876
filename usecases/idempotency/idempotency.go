// Package idempotency makes a side-effecting operation (charging a card,
// sending an email) execute at most once per idempotency key, however many
// times the request is retried or duplicated, and replays the first
// outcome to every duplicate.
//
// # Model
//
// A Key is scoped to a caller and an operation, so two callers' "abc" never
// collide. A request's Fingerprint (a hash of its inputs) is stored with
// the claim: reusing the key with a different payload is ErrMismatch,
// never a replay of someone else's answer.
//
// A record moves through: absent → in progress (claimed by one owner, with
// a lease) → completed (result stored: Complete), failed (a permanent
// failure recorded: Fail) or released (deleted, so a retry executes again:
// Release). A failure is replayed as an error wrapping ErrFailed. Do,
// Claim, Complete and Fail share one encoding of the outcome, so they mix
// freely on one key. Only the owner can complete or release. A
// duplicate while in progress gets ErrInProgress with a retry hint (the
// lease's remaining time), never a second execution; the HTTP middleware
// can instead let it wait for the outcome (MiddlewareConfig.WaitInProgress)
// and answers 409 with a one-second Retry-After when it does not.
//
// # TTL kind
//
// Fixed retention: the record lives Config.Retention from its first claim;
// reads, replays and completion never extend it. After that the key may be
// used afresh.
//
// # Crash after the side effect
//
// If the owner dies after the side effect but before Complete, its lease
// lapses; the next attempt takes the claim over as a recovery, not a fresh
// claim. Do then calls Config.Recover, which must find out (from the
// downstream system) whether the effect happened and either return its
// result or ask for a re-run; without a hook Do returns ErrNeedsRecovery
// rather than re-running blindly. The lease must therefore exceed the
// operation's worst-case duration.
//
// # Eviction
//
// Records are not pinned. Evicting an in-progress record lets a duplicate
// execute again; evicting a completed one makes a late duplicate execute
// again. Run with memory headroom or a store whose policy spares these keys
// (Redis: volatile-* with other keys carrying TTLs), or accept that bound.
//
// # Durability
//
// Records live as long as the store does. The embedded engine loses them
// when the process exits; a Redis without persistence loses them on
// restart. Either way a retry after the loss executes again: run Redis
// with appendonly yes where that matters.
//
// # Store failure
//
// Do and Claim return the store's error and do not execute: executing
// without a claim could execute twice. Do and the middleware record the
// outcome with a context the caller cannot cancel (a client that
// disconnects after the side effect does not make a retry execute again);
// if the store still fails, the failure is returned (Do) or reported
// (MiddlewareConfig.Options), the record stays in progress and the recovery path
// above applies.
package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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

// Backend is what a Store needs of a store: its decision. store.Backend
// implementations (embedded, redisstore) satisfy it.
type Backend interface {
	Idempotency(ctx context.Context, d *store.Idempotency) error
}

// Config configures a Store.
type Config struct {
	// Backend holds the records. Required.
	Backend Backend
	// Retention is how long a record lives from its first claim. 0 means
	// 24 hours; at most store.MaxTTL.
	Retention time.Duration
	// Lease is how long a claim stays exclusively in progress before
	// another attempt may recover it. 0 means 30 seconds. It must not
	// exceed Retention.
	Lease time.Duration
	// Prefix is prepended to every key. "" means "tide:idem:". Every
	// adapter checks its Prefix by one rule, and New refuses a Prefix
	// that breaks it with ErrInvalidConfig: 1 to 128 bytes of printable
	// ASCII without space; no '{' (the key's hash is its Redis Cluster
	// hash tag); and no overlap with another adapter's default key space
	// ("tide:sess:", "tide:flag:", "tide:rl:", "tide:lease:",
	// "tide:cache:") or the Redis backend's "tide:ver:": the Prefix is
	// neither a prefix of one nor begins with one ("tide:" is refused).
	// Adapters sharing a backend need prefixes neither of which is a
	// prefix of the other.
	Prefix string
	// Recover is called by Do when it takes over a claim whose previous
	// owner's lease lapsed. It returns the operation's result and done =
	// true if the side effect had happened (the result is stored and
	// returned), or done = false to run the operation again. nil means Do
	// returns ErrNeedsRecovery (and keeps the claim until its lease lapses).
	Recover func(ctx context.Context, k Key, prevOwner string) (result []byte, done bool, err error)
	// FinishTimeout bounds the store call that records an outcome after
	// the side effect (Do's complete, fail or release, and the
	// middleware's). That call runs with a context the caller cannot
	// cancel, so that a caller who gives up after the side effect does not
	// leave the record in progress. 0 means 10 seconds.
	FinishTimeout time.Duration
	// Logger receives a record for every store failure and every outcome
	// the store ignored (a completion after another attempt completed or
	// took the claim over, a release of a record no longer ours), with
	// the store key (a hash: no caller input) and the operation. nil means
	// none.
	Logger *slog.Logger
	// OnError, if set, is called with each of those after it is logged,
	// with the store key. It must be safe for concurrent use and should
	// not block.
	OnError func(ctx context.Context, key string, err error)
}

// Key identifies one logical request: the caller's idempotency key within
// a scope (the caller: an account, an API token) and an operation.
type Key struct {
	Scope, Operation, Key string
}

// State is the outcome of Claim.
type State uint8

const (
	// Execute: the caller owns a fresh claim and must execute, then
	// Complete or Release.
	Execute State = iota + 1
	// Recover: the caller owns a claim whose previous owner died before
	// completing; the side effect may have happened.
	Recover
	// InProgress: another attempt holds the claim; retry after RetryAfter.
	InProgress
	// Completed: the request completed; Result holds its stored result.
	Completed
)

func (s State) String() string {
	switch s {
	case Execute:
		return "execute"
	case Recover:
		return "recover"
	case InProgress:
		return "in progress"
	case Completed:
		return "completed"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Claim is the answer to a claim attempt.
type Claim struct {
	State State
	// Owner is the caller's owner token (Execute, Recover): pass it to
	// Complete or Release.
	Owner string
	// PrevOwner is the dead owner (Recover).
	PrevOwner string
	// Result is the stored result (Completed, when it succeeded).
	Result []byte
	// Err is the recorded permanent failure (Completed, when it failed; it
	// wraps ErrFailed). Result is nil then.
	Err error
	// RetryAfter is when the holder's lease lapses (InProgress).
	RetryAfter time.Duration
}

// Store is an idempotency store over a store.Backend. Create it with New;
// its zero value is not usable. It is safe for concurrent use and keeps no
// state of its own; Claim, Complete and Release are one store decision each
// (one round trip on a remote backend), Do is a Claim plus a Complete or
// Release around the caller's function.
type Store struct {
	cfg Config
	rep report.Reporter
	// Claim outcomes and failures, counted for Events.
	executed, recovered, inProgress, replayed, mismatched, storeErrors atomic.Uint64
}

// Events reports what Claim found since New, by name: "executed" (a new
// claim: the work runs), "recovered" (a lapsed claim taken over),
// "in_progress" (a duplicate while the first runs: the conflicts),
// "replayed" (a stored result returned), "mismatch" (the same key with
// another request) and "store_error". Do and the middleware claim through
// Claim, so they are counted too; a duplicate that waits
// (WaitInProgress) counts each claim it polls with. It makes a Store an
// EventSource for contrib/prometheus and expvarstats.
func (s *Store) Events() iter.Seq2[string, uint64] {
	return func(yield func(string, uint64) bool) {
		_ = yield("executed", s.executed.Load()) && yield("recovered", s.recovered.Load()) &&
			yield("in_progress", s.inProgress.Load()) && yield("replayed", s.replayed.Load()) &&
			yield("mismatch", s.mismatched.Load()) && yield("store_error", s.storeErrors.Load())
	}
}

// New returns a Store for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Store, error) {
	if cfg.Backend == nil {
		return nil, fmt.Errorf("%w: Backend is nil", ErrInvalidConfig)
	}
	if cfg.Retention < 0 || cfg.Lease < 0 || cfg.FinishTimeout < 0 {
		return nil, fmt.Errorf("%w: Retention = %v, Lease = %v, FinishTimeout = %v, want ≥ 0", ErrInvalidConfig, cfg.Retention, cfg.Lease, cfg.FinishTimeout)
	}
	if cfg.FinishTimeout == 0 {
		cfg.FinishTimeout = 10 * time.Second
	}
	if cfg.Retention == 0 {
		cfg.Retention = 24 * time.Hour
	}
	if cfg.Lease == 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Retention > store.MaxTTL {
		return nil, fmt.Errorf("%w: Retention %v exceeds %v", ErrInvalidConfig, cfg.Retention, store.MaxTTL)
	}
	if cfg.Lease > cfg.Retention {
		return nil, fmt.Errorf("%w: Lease %v exceeds Retention %v", ErrInvalidConfig, cfg.Lease, cfg.Retention)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = defaultPrefix
	}
	if err := keys.CheckPrefix(cfg.Prefix, defaultPrefix); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return &Store{cfg: cfg, rep: report.Reporter{Logger: cfg.Logger, OnError: cfg.OnError}}, nil
}

const defaultPrefix = keys.IdempotencyPrefix

// detach returns a context for recording an outcome after the side effect:
// ctx's values without its cancellation, bounded by FinishTimeout.
func (s *Store) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.FinishTimeout)
}

// Fingerprint hashes a request's inputs (SHA-256 over length-prefixed
// parts, so ("ab","c") ≠ ("a","bc")).
func Fingerprint(parts ...[]byte) []byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return h.Sum(nil)
}

// StoreKey returns the backend key for k: the prefix and a hash of the
// scope, operation and key (user input never reaches the key's syntax).
func (s *Store) StoreKey(k Key) string {
	sum := Fingerprint([]byte(k.Scope), []byte(k.Operation), []byte(k.Key))
	return s.cfg.Prefix + "{" + hex.EncodeToString(sum[:16]) + "}"
}

func newOwner() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return hex.EncodeToString(b[:])
}

// Claim tries to claim k for a request with fingerprint fp. A key reused
// with another fingerprint is ErrMismatch. A ctx that has ended is its
// cause, with nothing claimed.
//
// The store call itself runs with ctx's values but not its cancellation
// (bounded by Config.FinishTimeout), so that Claim always learns what the
// store decided: a caller that leaves while the claim is in flight would
// otherwise abandon a claim the store may have applied (a remote store
// runs a command whose reply the client stopped waiting for), an ownerless
// claim that keeps every retry in progress for the lease and then makes it
// a recovery, though nothing ran. If ctx ended meanwhile, Claim releases
// a claim it won fresh (nothing ran) and returns ctx's cause; a claim won
// as the recovery of a lapsed one stays, since the earlier run's side
// effect may have happened: the next retry after the lease recovers it.
func (s *Store) Claim(ctx context.Context, k Key, fp []byte) (Claim, error) {
	if k.Key == "" {
		return Claim{}, ErrInvalidKey
	}
	if ctx.Err() != nil {
		return Claim{}, context.Cause(ctx) // the caller went away: nothing claimed
	}
	owner := newOwner()
	d := &store.Idempotency{Op: store.IdemClaim, Key: s.StoreKey(k), Fingerprint: fp, Owner: owner,
		Lease: s.cfg.Lease, Retention: s.cfg.Retention}
	cctx, cancel := s.detach(ctx)
	defer cancel()
	if err := s.cfg.Backend.Idempotency(cctx, d); err != nil {
		if ctx.Err() != nil {
			return Claim{}, context.Cause(ctx) // the caller went away: not a store failure
		}
		s.report(ctx, slog.LevelError, "tide: idempotency claim failed", k, err)
		s.storeErrors.Add(1)
		return Claim{}, err
	}
	if ctx.Err() != nil {
		if d.Outcome == store.IdemClaimed {
			// Won fresh while the caller left: nothing ran, so a retry
			// must run, not wait for the lease and then recover.
			if _, err := s.finish(cctx, store.IdemRelease, k, owner, nil); err != nil {
				s.report(ctx, slog.LevelWarn, "tide: idempotency claim of a caller that left could not be released; a retry recovers it after the lease", k, err)
			}
		}
		return Claim{}, context.Cause(ctx)
	}
	switch d.Outcome {
	case store.IdemClaimed:
		s.executed.Add(1)
		return Claim{State: Execute, Owner: owner}, nil
	case store.IdemRecovered:
		s.recovered.Add(1)
		return Claim{State: Recover, Owner: owner, PrevOwner: d.PrevOwner}, nil
	case store.IdemInProgress:
		s.inProgress.Add(1)
		return Claim{State: InProgress, RetryAfter: max(d.LeaseLeft, 0)}, nil
	case store.IdemCompleted:
		s.replayed.Add(1)
		res, err := decodeOutcome(d.StoredResult)
		return Claim{State: Completed, Result: res, Err: err}, nil
	case store.IdemMismatch:
		s.mismatched.Add(1)
		return Claim{}, ErrMismatch
	}
	return Claim{}, fmt.Errorf("%w: unexpected claim outcome %v", store.ErrCorrupt, d.Outcome)
}

func (s *Store) finish(ctx context.Context, op store.IdemOp, k Key, owner string, result []byte) ([]byte, error) {
	d := &store.Idempotency{Op: op, Key: s.StoreKey(k), Owner: owner, Result: result}
	if err := s.cfg.Backend.Idempotency(ctx, d); err != nil {
		s.report(ctx, slog.LevelError, "tide: idempotency "+opNames[op]+" failed; the record stays in progress until its lease lapses", k, err)
		return nil, err
	}
	switch d.Outcome {
	case store.IdemCompleted:
		if op == store.IdemRelease {
			return d.StoredResult, ErrNotOwner // completed by someone: not ours to release
		}
		return d.StoredResult, nil
	case store.IdemReleased:
		return nil, nil
	case store.IdemAbsent:
		return nil, ErrNotFound
	}
	return nil, ErrNotOwner
}

var opNames = [...]string{store.IdemClaim: "claim", store.IdemComplete: "completion", store.IdemRelease: "release", store.IdemInspect: "inspection"}

// report reports err about k to the configured Logger and OnError.
func (s *Store) report(ctx context.Context, level slog.Level, msg string, k Key, err error) {
	s.rep.Report(ctx, level, msg, s.StoreKey(k), err, slog.String("operation", k.Operation))
}

// Complete stores result for k if owner holds the claim, and returns the
// stored result. If k was already completed the earlier outcome wins: its
// result is returned (or, if it was a failure, an error wrapping
// ErrFailed).
func (s *Store) Complete(ctx context.Context, k Key, owner string, result []byte) ([]byte, error) {
	stored, err := s.finish(ctx, store.IdemComplete, k, owner, encodeOutcome(result, nil))
	if err != nil {
		return nil, err
	}
	return decodeOutcome(stored)
}

// Fail records cause as k's final outcome if owner holds the claim: every
// duplicate gets an error wrapping ErrFailed with cause's message. Use it
// for failures after a side effect, or that retrying cannot fix; use
// Release when a retry should execute again. If k was already completed
// the earlier outcome wins.
func (s *Store) Fail(ctx context.Context, k Key, owner string, cause error) error {
	if cause == nil {
		cause = ErrFailed
	}
	_, err := s.finish(ctx, store.IdemComplete, k, owner, encodeOutcome(nil, cause))
	return err
}

// Release deletes owner's in-progress claim so that a retry executes again
// (use it when the operation failed before any side effect).
func (s *Store) Release(ctx context.Context, k Key, owner string) error {
	_, err := s.finish(ctx, store.IdemRelease, k, owner, nil)
	return err
}

// Do executes fn at most once for k among all requests with fingerprint
// fp, and returns its result; replayed reports that the result is a
// previous execution's. A duplicate during execution gets an
// *InProgressError; a different payload gets ErrMismatch. If fn fails with
// an error marked Permanent, the failure is recorded and every duplicate
// gets an error wrapping ErrFailed; any other error releases the claim, so
// a retry executes again. If fn panics, the panic propagates and the
// claim stays in progress, as if the owner had died: a claim whose owner
// died is handed to Config.Recover once its lease lapses.
//
// Once fn has run, its outcome is recorded with a context that ctx's
// cancellation does not reach (bounded by Config.FinishTimeout): a caller
// that gives up mid-way cannot leave the record in progress. A failure to
// record is returned (joined with fn's error, if any).
func (s *Store) Do(ctx context.Context, k Key, fp []byte, fn func(ctx context.Context) ([]byte, error)) (result []byte, replayed bool, err error) {
	if fn == nil {
		return nil, false, fmt.Errorf("%w: nil function", ErrInvalidConfig)
	}
	c, err := s.Claim(ctx, k, fp)
	if err != nil {
		return nil, false, err
	}
	switch c.State {
	case InProgress:
		return nil, false, &InProgressError{RetryAfter: c.RetryAfter}
	case Completed:
		return c.Result, true, c.Err
	case Recover:
		if s.cfg.Recover == nil {
			return nil, false, ErrNeedsRecovery
		}
		res, done, err := s.cfg.Recover(ctx, k, c.PrevOwner)
		if err != nil {
			return nil, false, err // keep the claim: its lease lapses and recovery is retried
		}
		if done {
			fctx, cancel := s.detach(ctx)
			defer cancel()
			return s.complete(fctx, k, c.Owner, res)
		}
	}
	res, err := fn(ctx)
	fctx, cancel := s.detach(ctx)
	defer cancel()
	var perm permanent
	if err != nil && !errors.As(err, &perm) {
		switch rerr := s.Release(fctx, k, c.Owner); {
		case errors.Is(rerr, ErrNotOwner), errors.Is(rerr, ErrNotFound):
			s.report(ctx, slog.LevelWarn, "tide: idempotency release ignored", k, rerr)
		case rerr != nil:
			return nil, false, errors.Join(err, rerr)
		}
		return nil, false, err
	}
	if err != nil {
		if ferr := s.Fail(fctx, k, c.Owner, err); ferr != nil {
			return nil, false, errors.Join(err, ferr)
		}
		return nil, false, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return s.complete(fctx, k, c.Owner, res)
}

// complete is Complete for Do: an outcome the store ignored (the key was
// completed by an attempt that took the claim over, or it is gone) is
// reported, and the stored outcome, if any, is returned.
func (s *Store) complete(ctx context.Context, k Key, owner string, res []byte) ([]byte, bool, error) {
	stored, err := s.Complete(ctx, k, owner, res)
	switch {
	case errors.Is(err, ErrNotOwner), errors.Is(err, ErrNotFound):
		s.report(ctx, slog.LevelWarn, "tide: idempotency completion ignored", k, err)
	case err == nil && !bytes.Equal(stored, res), errors.Is(err, ErrFailed):
		s.report(ctx, slog.LevelWarn, "tide: idempotency completion ignored; the earlier outcome stands", k, ErrCompletedElsewhere)
	}
	return stored, false, err
}

// The stored outcome, for every completion made through this package: 'c'
// + result, or 'f' + the failure's message.
func encodeOutcome(res []byte, err error) []byte {
	if err != nil {
		return append([]byte{'f'}, err.Error()...)
	}
	return append([]byte{'c'}, res...)
}

func decodeOutcome(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty idempotency outcome", store.ErrCorrupt)
	}
	switch b[0] {
	case 'c':
		return b[1:], nil
	case 'f':
		return nil, fmt.Errorf("%w: %s", ErrFailed, b[1:])
	}
	return nil, fmt.Errorf("%w: idempotency outcome tag %q", store.ErrCorrupt, b[0])
}
