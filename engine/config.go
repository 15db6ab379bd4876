package engine

import (
	"fmt"
	"math/bits"
	"runtime"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
)

// DefaultMaxKeySize is the longest key accepted when Config.MaxKeySize is 0.
const DefaultMaxKeySize = 64 << 10

// maxKeySizeLimit is the largest Config.MaxKeySize accepted.
const maxKeySizeLimit = maxKeyLen

// minShardBytes is the smallest even share of MaxBytes per shard the
// default shard count produces, so that a write that needs room usually
// finds victims in its own shard (see budget).
const minShardBytes = 1 << 20

// Config configures an Engine. The zero value is a valid configuration: an
// unbounded engine on the real clock with a 100 ms active expiry cycle.
type Config struct {
	// Shards is the number of independently locked shards, rounded up to a
	// power of two (at most 65536). 0 picks 16×GOMAXPROCS (at least 64),
	// reduced when MaxBytes is set so that each shard's even share of it
	// is at least 1 MiB. The shard count affects speed only: what may be
	// stored, and how much, depends on MaxBytes alone.
	Shards int

	// Clock is the time source. nil means clock.Real. Its readings are
	// Unix nanoseconds, never before the epoch: the engine's time never
	// goes below 0, so under a clock that reads before 1970 it would stand
	// still at 0 and no TTL would expire. A *clock.Manual that reads before
	// the epoch at New (clock.NewManual(time.Time{}) does) is
	// ErrInvalidConfig; New reads no other clock. A clock that steps back
	// later reads as standing still until it passes the highest time seen.
	Clock clock.Clock

	// ExpiryInterval is the period of the active expiry cycle. 0 means
	// 100 ms. A negative value starts no background goroutine: expiry is
	// then lazy plus whatever RunExpiryCycle calls the caller makes.
	ExpiryInterval time.Duration

	// ExpiryBudget bounds the work of one active expiry cycle. Zero fields
	// mean defaults (see expiry.Budget).
	ExpiryBudget expiry.Budget

	// MaxKeySize is the longest key accepted, in bytes: 0 means 64 KiB; at
	// most 16 MiB - 1.
	MaxKeySize int

	// MaxBytes caps the accounted memory of the whole engine: the sum over
	// its entries of key + value + EntryOverhead never exceeds it, however
	// many shards there are. 0 means no cap; a cap below EntryOverhead
	// (room for no entry at all) is ErrInvalidConfig. An entry is
	// storable iff key + value ≤ MaxEntrySize and key + value +
	// EntryOverhead ≤ MaxBytes (else ErrTooLarge); a cap of N entries'
	// worth holds N entries.
	MaxBytes int64

	// Policy chooses victims when a write needs room under MaxBytes. The
	// zero value is evict.NoEviction: such writes fail with ErrOutOfMemory.
	Policy evict.Spec

	// OnRemove, if set, is called after every removal with its cause. It
	// runs outside every engine lock (the expiry cycle's included), on the
	// goroutine that caused the removal (a caller's RunExpiryCycle, or the
	// expiry goroutine). It may call the engine, RunExpiryCycle and Close
	// included (Close does not wait for a running listener). A listener
	// that panics leaves the engine consistent: on a caller's goroutine the
	// panic reaches the caller after its operation completed; in the expiry
	// goroutine it is recovered and counted in Stats.ListenerPanics. A
	// listener that blocks stalls only the goroutine it runs on (a blocked
	// expiry goroutine delays active expiry; lazy expiry still hides due
	// keys).
	OnRemove func(Removal)

	// Durability configures the append-only log that makes the engine
	// survive a restart and a crash. The zero value logs nothing.
	Durability Durability
}

func (c Config) resolve() (Config, int, error) {
	if c.Shards < 0 || c.Shards > 1<<16 {
		return c, 0, fmt.Errorf("%w: Shards = %d, want 0..65536", ErrInvalidConfig, c.Shards)
	}
	if c.MaxKeySize < 0 || c.MaxKeySize > maxKeySizeLimit {
		return c, 0, fmt.Errorf("%w: MaxKeySize = %d, want 0..%d", ErrInvalidConfig, c.MaxKeySize, maxKeySizeLimit)
	}
	if c.MaxBytes < 0 || (c.MaxBytes > 0 && c.MaxBytes < EntryOverhead) {
		return c, 0, fmt.Errorf("%w: MaxBytes = %d, want 0 (no cap) or ≥ EntryOverhead (%d)", ErrInvalidConfig, c.MaxBytes, EntryOverhead)
	}
	if c.ExpiryBudget.Count < 0 || c.ExpiryBudget.Batch < 0 || c.ExpiryBudget.Time < 0 {
		return c, 0, fmt.Errorf("%w: ExpiryBudget = %+v, want fields ≥ 0", ErrInvalidConfig, c.ExpiryBudget)
	}
	if c.Policy.New == nil && c.Policy.Name != "" && c.Policy.Name != evict.NoEviction.Name {
		return c, 0, fmt.Errorf("%w: Policy %q has no constructor", ErrInvalidConfig, c.Policy.Name)
	}
	d, err := c.Durability.resolve()
	if err != nil {
		return c, 0, err
	}
	c.Durability = d
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if m, ok := c.Clock.(*clock.Manual); ok && m.Now() < 0 {
		// A manual clock's reading has no side effect; another clock's
		// first reading belongs to the engine's first operation.
		return c, 0, fmt.Errorf("%w: Clock reads %v, before the Unix epoch", ErrInvalidConfig, m.Time())
	}
	if c.ExpiryInterval == 0 {
		c.ExpiryInterval = 100 * time.Millisecond
	}
	if c.MaxKeySize == 0 {
		c.MaxKeySize = DefaultMaxKeySize
	}
	n := c.Shards
	if n == 0 {
		n = max(64, 16*runtime.GOMAXPROCS(0))
		if c.MaxBytes > 0 {
			n = min(n, int(max(1, c.MaxBytes/minShardBytes)))
		}
	}
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	if c.MaxBytes > 0 && c.Shards == 0 {
		for n > 1 && c.MaxBytes/int64(n) < minShardBytes {
			n /= 2
		}
	}
	return c, n, nil
}
