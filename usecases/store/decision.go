package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// The decisions below are run by the methods of Decisions. A decision value
// carries its parameters and, after the call, its results; reuse one only
// after resetting its result fields (the call overwrites them all).
//
// Times in the semantics below are the store's clock at the moment the
// decision runs ("now"). Durations are in nanoseconds; a backend may
// compute with a coarser granularity (Redis: microseconds, TTLs rounded up
// to whole milliseconds) and may reject, with ErrInvalidArgument,
// parameters its arithmetic cannot represent exactly (each backend
// documents its limits). Tests in storetest use millisecond-multiple
// parameters, so every granularity gives identical answers.

// TokenBucket consumes Cost tokens from a bucket of Capacity tokens that
// refills one token every Interval. It is computed in GCRA form: the key
// holds one timestamp, tat, the time at which the bucket will be full
// again (an absent key means full):
//
//	burst := Capacity * Interval
//	tat := max(stored tat, now)           // absent: now
//	next := tat + Cost*Interval
//	if next - now <= burst {               // allowed
//		store tat = next with TTL next-now (no write if Cost == 0)
//		Allowed, Remaining = true, (burst - (next-now)) / Interval
//		RetryAfter, Reset = 0, next - now
//	} else {                               // denied: nothing changes
//		Allowed, Remaining = false, (burst - (tat-now)) / Interval
//		RetryAfter, Reset = next - now - burst, tat - now
//	}
//
// Remaining rounds down. Over any interval of length T it admits at most
// Capacity + T/Interval tokens. Capacity ≥ 1, Interval > 0, 0 ≤ Cost ≤
// Capacity, and Capacity*Interval ≤ MaxTTL; otherwise ErrInvalidArgument.
type TokenBucket struct {
	Key      string
	Capacity int64
	Interval time.Duration
	Cost     int64

	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration // 0 if allowed
	Reset      time.Duration // until the bucket is full again
}

// FixedWindow counts Cost against a counter that lives for one Window from
// the admission that creates it:
//
//	n := stored count (absent: 0)
//	if n + Cost <= Limit {
//		if absent { create count = Cost with TTL Window }
//		else { count = n + Cost, keeping the TTL }
//		Allowed, Remaining, Reset = true, Limit - count, TTL left
//	} else {                              // denied: nothing changes
//		Allowed, Remaining = false, Limit - n
//		RetryAfter = Reset = TTL left (Window if absent)
//	}
//
// The expiry is set only by the write that creates the key; later
// admissions never extend it. Cost 0 peeks: it writes nothing (and reports
// Reset 0 for an absent key). Remaining is never negative. Limit ≥ 1,
// 0 < Window ≤ MaxTTL, 0 ≤ Cost (otherwise ErrInvalidArgument); Cost >
// Limit is simply denied.
type FixedWindow struct {
	Key    string
	Limit  int64
	Window time.Duration
	Cost   int64

	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
	Reset      time.Duration
}

// SlidingWindow admits at most Limit units in any window of length Window
// ending now. It keeps an exact log of admission times (a sorted set on
// Redis), so it costs O(Limit) memory per key:
//
//	drop log entries at or before now - Window
//	n := len(log)
//	if n + Cost <= Limit {
//		append Cost entries stamped now; key TTL = Window
//		Allowed, Remaining = true, Limit - n - Cost
//		Reset = newest + Window - now
//	} else {                              // denied: no admission recorded
//		k := n + Cost - Limit             // entries that must leave
//		Allowed, Remaining = false, Limit - n
//		RetryAfter = log[k-1] + Window - now  (log ascending)
//		Reset = newest + Window - now
//	}
//
// Limit in 1..MaxSlidingLimit, 0 < Window ≤ MaxTTL, 0 ≤ Cost ≤ Limit;
// otherwise ErrInvalidArgument.
type SlidingWindow struct {
	Key    string
	Limit  int64
	Window time.Duration
	Cost   int64

	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
	Reset      time.Duration
}

// MaxSlidingLimit bounds SlidingWindow.Limit (the log's length).
const MaxSlidingLimit = 1 << 16

// IdemOp selects what an Idempotency decision does.
type IdemOp uint8

const (
	// IdemClaim claims the key for Owner, or reports why it cannot.
	IdemClaim IdemOp = iota
	// IdemComplete stores Result and marks the key completed, if Owner
	// holds it.
	IdemComplete
	// IdemRelease deletes an in-progress claim held by Owner, so that a
	// retry executes again (a failure before any side effect).
	IdemRelease
	// IdemInspect reports the state and changes nothing.
	IdemInspect
)

// IdemOutcome is the result of an Idempotency decision.
type IdemOutcome uint8

const (
	// IdemAbsent: there is no record (never claimed, released, or its
	// retention elapsed).
	IdemAbsent IdemOutcome = iota
	// IdemClaimed: the caller now owns a fresh claim and must execute.
	IdemClaimed
	// IdemRecovered: the caller now owns a claim whose previous owner's
	// lease expired before it completed; PrevOwner names that owner. The
	// side effect may or may not have happened.
	IdemRecovered
	// IdemInProgress: another owner holds a live claim; LeaseLeft says
	// when it lapses. For Complete/Release by a non-owner this is also the
	// answer.
	IdemInProgress
	// IdemCompleted: the key is completed; StoredResult holds the result.
	IdemCompleted
	// IdemMismatch: the key exists with a different fingerprint.
	IdemMismatch
	// IdemReleased: the caller's claim was deleted.
	IdemReleased
	// IdemNotOwner: Complete/Release by someone who does not hold the
	// claim (another owner took it over after the lease lapsed).
	IdemNotOwner
)

var idemOutcomeNames = [...]string{"absent", "claimed", "recovered", "in progress", "completed", "mismatch", "released", "not owner"}

func (o IdemOutcome) String() string {
	if int(o) < len(idemOutcomeNames) {
		return idemOutcomeNames[o]
	}
	return fmt.Sprintf("IdemOutcome(%d)", uint8(o))
}

// Idempotency is the idempotency-key state machine. A record holds state
// (in progress or completed), fingerprint, owner, lease deadline and, once
// completed, the result. Its TTL is Retention, set by the claim that
// creates it and never extended (reads and later steps keep it).
//
// IdemClaim (Fingerprint, Owner, Lease > 0, Lease ≤ Retention ≤ MaxTTL):
//
//	absent:                         create {in progress, fp, Owner, now+Lease}
//	                                with TTL Retention → IdemClaimed
//	fp differs:                     → IdemMismatch (nothing changes)
//	completed:                      → IdemCompleted, StoredResult
//	in progress, lease live:        → IdemInProgress, LeaseLeft, Holder
//	in progress, lease lapsed:      owner = Owner, lease = now+Lease, keep
//	                                TTL → IdemRecovered, PrevOwner
//
// IdemComplete (Owner, Result): in progress and owner == Owner (lapsed
// lease or not, as long as nobody took over): store Result, state
// completed, keep TTL → IdemCompleted. Already completed → IdemCompleted
// with the stored result (not overwritten). Absent → IdemAbsent. Other
// owner → IdemNotOwner.
//
// IdemRelease (Owner): in progress and owner == Owner → delete →
// IdemReleased. Absent → IdemAbsent; completed → IdemCompleted; other owner
// → IdemNotOwner.
//
// IdemInspect: IdemAbsent, IdemInProgress (LeaseLeft ≤ 0 if lapsed) or
// IdemCompleted; Fingerprint is not checked.
type Idempotency struct {
	Op          IdemOp
	Key         string
	Fingerprint []byte
	Owner       string
	Lease       time.Duration
	Retention   time.Duration
	Result      []byte

	Outcome      IdemOutcome
	StoredResult []byte
	Holder       string        // current owner when IdemInProgress
	PrevOwner    string        // when IdemRecovered
	LeaseLeft    time.Duration // when IdemInProgress
	TTL          time.Duration // record's retention left after the decision (0 if none)
}

// LeaseOp selects what a Lease decision does.
type LeaseOp uint8

const (
	// LeaseAcquire takes the lease if it is free.
	LeaseAcquire LeaseOp = iota
	// LeaseRenew extends the caller's lease to TTL from now.
	LeaseRenew
	// LeaseRelease frees the caller's lease.
	LeaseRelease
	// LeaseInspect reports the current holder and changes nothing.
	LeaseInspect
)

// LeaseInfo describes a held lease.
type LeaseInfo struct {
	Holder string
	Token  uint64
	TTL    time.Duration
}

// Lease is a lease with a fencing token. Key and FenceKey must differ and
// share a non-empty hash tag (KeyTag), else ErrInvalidArgument on every
// backend. Key holds {holder, token} with the
// lease's TTL; FenceKey holds the highest token ever issued, as a base-10
// integer, pinned and without TTL, so it never expires, is never evicted,
// and never goes backwards.
//
// LeaseAcquire (Holder non-empty, 0 < TTL ≤ MaxTTL; so for LeaseRenew):
//
//	if Key is live { OK = false }                // even for the same holder
//	else {
//		t := max(fence + 1, MinToken)            // fence absent: 0
//		fence = t (pinned, no TTL); Key = {Holder, t} with TTL (pinned)
//		OK = true
//	}
//
// LeaseRenew (Holder, Token, TTL): if Key is live with this holder and
// token, its TTL becomes TTL → OK. LeaseRelease (Holder, Token): same check,
// then delete Key → OK. The fence is never touched by renew or release.
// LeaseInspect: OK reports whether Key is live.
//
// After every op, Current describes the live lease (zero if none) and
// Fence is the fence counter's value.
type Lease struct {
	Op       LeaseOp
	Key      string
	FenceKey string
	Holder   string
	Token    uint64
	TTL      time.Duration
	// MinToken raises the next token to at least this value (used to carry
	// the fence across a restart of a non-durable store; see package
	// lease).
	MinToken uint64

	OK      bool
	Current LeaseInfo
	Fence   uint64
}

// FlagWrite writes a flag record and appends an audit record in one atomic
// step (Key and AuditKey must differ and share a non-empty hash tag,
// KeyTag, else ErrInvalidArgument on every backend):
//
//	if version(Key) != IfVersion {           // IfVersion 0: Key must be absent
//		OK, Current = false, version(Key)    // nothing changes
//	} else {
//		Key = Value (pinned, no TTL)
//		AuditKey = AppendLog(AuditKey, Audit, AuditKeep) (pinned, no TTL)
//		OK, Version = true, new version of Key
//	}
//
// AuditKeep ≥ 0 bounds the log to its newest AuditKeep records (0 keeps
// all). The audit log's encoding is fixed (AppendLog) so that adapters read
// it with Get and DecodeLog.
type FlagWrite struct {
	Key       string
	IfVersion uint64
	Value     []byte
	AuditKey  string
	Audit     []byte
	AuditKeep int

	OK      bool
	Version uint64 // Key's new version when OK
	Current uint64 // Key's version (0 if absent) when not OK
}

// AppendLog appends rec to the encoded log and drops the oldest records
// beyond keep (keep ≤ 0 keeps all). The encoding is a concatenation of
// records, each a 4-byte big-endian length followed by the bytes (Lua:
// struct.pack(">I4", #rec) .. rec). A log that does not decode is
// ErrCorrupt.
func AppendLog(log, rec []byte, keep int) ([]byte, error) {
	recs, err := DecodeLog(log)
	if err != nil {
		return nil, err
	}
	if keep > 0 && len(recs) >= keep {
		recs = recs[len(recs)-keep+1:]
	}
	out := make([]byte, 0, len(log)+4+len(rec))
	for _, r := range recs {
		out = binary.BigEndian.AppendUint32(out, uint32(len(r)))
		out = append(out, r...)
	}
	out = binary.BigEndian.AppendUint32(out, uint32(len(rec)))
	return append(out, rec...), nil
}

// DecodeLog splits a log written by AppendLog into its records, oldest
// first. The records alias log.
func DecodeLog(log []byte) ([][]byte, error) {
	var recs [][]byte
	for len(log) > 0 {
		if len(log) < 4 {
			return nil, fmt.Errorf("%w: truncated log header", ErrCorrupt)
		}
		n := binary.BigEndian.Uint32(log)
		log = log[4:]
		if uint64(n) > uint64(len(log)) {
			return nil, fmt.Errorf("%w: truncated log record", ErrCorrupt)
		}
		recs = append(recs, log[:n:n])
		log = log[n:]
	}
	return recs, nil
}

// Validate reports invalid parameters as an error wrapping ErrInvalidArgument.
func (d *TokenBucket) Validate() error {
	if d.Capacity < 1 || d.Interval <= 0 || d.Cost < 0 || d.Cost > d.Capacity || d.Capacity > int64(MaxTTL/d.Interval) {
		return fmt.Errorf("%w: token bucket capacity %d, interval %v, cost %d", ErrInvalidArgument, d.Capacity, d.Interval, d.Cost)
	}
	return nil
}

// Validate reports invalid parameters as an error wrapping ErrInvalidArgument.
func (d *FixedWindow) Validate() error {
	if d.Limit < 1 || d.Window <= 0 || d.Window > MaxTTL || d.Cost < 0 {
		return fmt.Errorf("%w: fixed window limit %d, window %v, cost %d", ErrInvalidArgument, d.Limit, d.Window, d.Cost)
	}
	return nil
}

// Validate reports invalid parameters as an error wrapping ErrInvalidArgument.
func (d *SlidingWindow) Validate() error {
	if d.Limit < 1 || d.Limit > MaxSlidingLimit || d.Window <= 0 || d.Window > MaxTTL || d.Cost < 0 || d.Cost > d.Limit {
		return fmt.Errorf("%w: sliding window limit %d, window %v, cost %d", ErrInvalidArgument, d.Limit, d.Window, d.Cost)
	}
	return nil
}

// Validate reports invalid parameters as an error wrapping ErrInvalidArgument.
func (d *Idempotency) Validate() error {
	switch d.Op {
	case IdemClaim:
		if d.Owner == "" || d.Lease <= 0 || d.Retention < d.Lease || d.Retention > MaxTTL {
			return fmt.Errorf("%w: idempotency claim needs an owner and 0 < lease ≤ retention ≤ %v (owner %q, lease %v, retention %v)",
				ErrInvalidArgument, MaxTTL, d.Owner, d.Lease, d.Retention)
		}
	case IdemComplete, IdemRelease:
		if d.Owner == "" {
			return fmt.Errorf("%w: idempotency op %d needs an owner", ErrInvalidArgument, d.Op)
		}
	case IdemInspect:
	default:
		return fmt.Errorf("%w: idempotency op %d", ErrInvalidArgument, d.Op)
	}
	return nil
}

// Validate reports invalid parameters as an error wrapping ErrInvalidArgument.
func (d *Lease) Validate() error {
	switch {
	case d.Key == "" && d.Op != LeaseInspect, d.Op > LeaseInspect:
		return fmt.Errorf("%w: lease op %d on key %q", ErrInvalidArgument, d.Op, d.Key)
	case d.Key == d.FenceKey:
		return fmt.Errorf("%w: lease key and fence key are both %q", ErrInvalidArgument, d.Key)
	case !sameTag(d.Key, d.FenceKey):
		return fmt.Errorf("%w: lease key %q and fence key %q do not share a hash tag (wrap the lease's name with HashTag)", ErrInvalidArgument, d.Key, d.FenceKey)
	case d.Op == LeaseAcquire && (d.Holder == "" || d.TTL <= 0 || d.TTL > MaxTTL),
		d.Op == LeaseRenew && (d.TTL <= 0 || d.TTL > MaxTTL),
		d.MinToken > math.MaxInt64:
		return fmt.Errorf("%w: lease op %d with holder %q, ttl %v, min token %d", ErrInvalidArgument, d.Op, d.Holder, d.TTL, d.MinToken)
	}
	return nil
}

// Validate reports invalid parameters as an error wrapping ErrInvalidArgument.
func (d *FlagWrite) Validate() error {
	if d.Key == d.AuditKey || d.AuditKeep < 0 || !sameTag(d.Key, d.AuditKey) {
		return fmt.Errorf("%w: flag write key %q, audit key %q (they must differ and share a hash tag), keep %d", ErrInvalidArgument, d.Key, d.AuditKey, d.AuditKeep)
	}
	return nil
}
