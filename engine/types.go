package engine

import (
	"strconv"
	"time"
)

// Cause says why an entry was removed.
type Cause uint8

const (
	// CauseDeleted: removed by Delete, GetAndDelete, CompareAndDelete, a
	// transaction, or an ExpireAt whose deadline was already due (as
	// Redis's EXPIREAT does).
	CauseDeleted Cause = iota + 1
	// CauseExpired: its deadline passed (lazy or active expiry).
	CauseExpired
	// CauseEvicted: chosen by the eviction policy to make room under
	// MaxBytes.
	CauseEvicted
	// CauseReplaced: its value was overwritten by a write.
	CauseReplaced
)

func (c Cause) String() string {
	switch c {
	case CauseDeleted:
		return "deleted"
	case CauseExpired:
		return "expired"
	case CauseEvicted:
		return "evicted"
	case CauseReplaced:
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

// Special version values (see "Contract" in the package doc). No key ever
// has version 0: versions start at 1.
const (
	// AnyVersion, as SetOptions.IfVersion, puts no condition on the key's
	// version.
	AnyVersion uint64 = 0
	// MustBeAbsent, as Precondition.Version, requires that the key does
	// not exist. As the version argument of CompareAndSwap or
	// CompareAndDelete it matches no key.
	MustBeAbsent uint64 = 0
)

// NoTTL says "no expiry": the TTL reported for a key without one, and the
// TTL a write passes (SetOptions.TTL, IncrOptions.TTL, Op.TTL) to create or
// leave a key without one. See "Contract" in the package doc.
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
	// ConditionAlways writes whether or not the key exists.
	ConditionAlways Condition = iota
	// ConditionIfAbsent writes only if the key does not exist (Redis SET
	// NX). A due key does not exist.
	ConditionIfAbsent
	// ConditionIfPresent writes only if the key exists (Redis SET XX).
	ConditionIfPresent
)

// SetOptions modify a write. A write says what happens to the key's TTL:
// TTL > 0 (expire TTL from now), TTL NoTTL (no expiry), or KeepTTL. The
// zero value says none of these and is ErrInvalidTTL (see "Contract"
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
	// IfVersion, unless AnyVersion, makes the write a compare-and-swap:
	// it happens only if the key exists with exactly this version.
	IfVersion uint64
	// Pin exempts the key from eviction (see "Contract" in the package
	// doc: a write without Pin leaves pinning as it was).
	Pin bool
}

// IncrOptions modify a counter operation. The zero value is ErrInvalidTTL:
// TTL must say what a created key gets.
type IncrOptions struct {
	// TTL is the TTL of a key the increment creates (the fixed-window
	// counter needs exactly this): positive, or NoTTL for none; 0 and other
	// negatives are ErrInvalidTTL. An existing key keeps its deadline.
	TTL time.Duration
	// Pin pins the key, as SetOptions.Pin does (fencing counters need
	// this).
	Pin bool
}

// ExpireCondition restricts Expire as Redis's EXPIRE options do.
type ExpireCondition uint8

const (
	// ExpireConditionAlways sets the deadline unconditionally.
	ExpireConditionAlways ExpireCondition = iota
	// ExpireConditionNX sets it only if the key has no TTL.
	ExpireConditionNX
	// ExpireConditionXX sets it only if the key has a TTL.
	ExpireConditionXX
	// ExpireConditionGT sets it only if it is later than the current one
	// (a key without TTL counts as infinite, so GT never applies to it).
	ExpireConditionGT
	// ExpireConditionLT sets it only if it is earlier than the current one
	// (a key without TTL counts as infinite, so LT always applies to it).
	ExpireConditionLT
)

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
	// CalmShards counts the shards whose policy sees one read in 16: with
	// room to spare under MaxBytes and not filling (see "Expiry and
	// eviction" in the package doc); as of each shard's last drain.
	CalmShards int
	// ListenerPanics counts OnRemove panics recovered in the expiry
	// goroutine (a panic on a caller's goroutine reaches the caller).
	ListenerPanics uint64
}
