package engine

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/internal/aof"
)

// SyncPolicy says when the durability log is fsynced, as Redis's
// appendfsync does. See Durability and docs/DURABILITY.md for what each
// policy can lose.
type SyncPolicy uint8

const (
	// SyncEverySecond (the zero value, Redis's everysec) acknowledges a
	// write once its record is in the kernel and fsyncs in the background
	// every Durability.SyncInterval: a process crash loses nothing
	// acknowledged, an OS crash about the last second.
	SyncEverySecond SyncPolicy = iota
	// SyncAlways (Redis's always) acknowledges a write only after its
	// record is durable. Concurrent writers (on different shards) share an
	// fsync (group commit).
	SyncAlways
	// SyncNo (Redis's no) acknowledges a write once its record is in the
	// kernel and leaves flushing to the OS (and to Close).
	SyncNo
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncEverySecond:
		return "everysec"
	case SyncAlways:
		return "always"
	case SyncNo:
		return "no"
	}
	return fmt.Sprintf("SyncPolicy(%d)", uint8(p))
}

// NoAutoRewrite as Durability.RewritePercent turns automatic rewrites off:
// the log is then compacted only by Engine.Rewrite.
const NoAutoRewrite = -1

// Default rewrite thresholds (Redis's auto-aof-rewrite-percentage and
// auto-aof-rewrite-min-size).
const (
	DefaultRewritePercent = 100
	DefaultRewriteMinSize = 64 << 20
)

// Automatic rewrite backoff: after n consecutive failed automatic
// rewrites (a full disk, a failing directory fsync) the next is not tried
// before rewriteBackoffMin << (n-1) has passed on the engine's clock,
// capped at rewriteBackoffMax, so that a persistent failure costs one
// rewrite attempt (a new incremental log, a base written until it fails)
// per cap rather than one per check. A successful rewrite, automatic or
// Engine.Rewrite, resets it; Engine.Rewrite itself never waits.
const (
	rewriteBackoffMin = time.Second
	rewriteBackoffMax = 5 * time.Minute
)

// rewriteBackoff returns the wait after n ≥ 1 consecutive failures.
func rewriteBackoff(n int) time.Duration {
	if n-1 >= 16 || rewriteBackoffMin<<(n-1) > rewriteBackoffMax {
		return rewriteBackoffMax
	}
	return rewriteBackoffMin << (n - 1)
}

// versionBlock is how many versions a shard reserves with one durable
// OpVersions record: a shard never hands out a version above its durable
// reservation, so a log tail lost in an OS crash (SyncEverySecond, SyncNo)
// never makes an acknowledged version reusable. One fsync per block per
// shard.
const versionBlock = 1 << 20

// versionLimit is the highest version a log or a snapshot may carry: far
// above what an engine hands out (2^62 writes), and far enough below 2^64
// that a counter resumed there never wraps to 0 (AnyVersion,
// MustBeAbsent) and reuses versions. A higher one is ErrLogCorrupt.
const versionLimit = 1 << 62

// Durability configures the engine's append-only log. The zero value (no
// Dir) logs nothing: the engine is purely in memory, and the write path
// pays one nil check.
//
// With a Dir, every mutation is planned under its shard's lock, appended
// to the log (waiting as Sync says), and only then applied; a write whose
// record cannot be appended fails with ErrLogWrite (or ErrLogFailed) and
// changes nothing in memory. New replays the directory before it returns
// (see Recovery). Deadlines are logged as absolute instants of the
// engine's clock (clock.Real reads Unix time), so an entry whose deadline
// passed while the process was down is not restored. Lazy and active
// expiry are not logged (recovery drops due entries); evictions are logged
// as version-checked removals with the next record of their shard. See
// docs/DURABILITY.md for the contract per policy.
type Durability struct {
	// Dir is the log's directory, created (mode 0700) if missing. Empty
	// means no log. One engine at a time may use a directory (ErrLogLocked);
	// one New cannot open (a file, not creatable) is ErrLogOpen.
	Dir string
	// Sync is the fsync policy; the zero value is SyncEverySecond.
	Sync SyncPolicy
	// SyncInterval is SyncEverySecond's period: 0 means 1 s; negative is
	// ErrInvalidConfig.
	SyncInterval time.Duration
	// TruncateCorrupt makes New cut the log at a corruption found in the
	// middle of an incremental log (a bad record with valid ones after it)
	// instead of failing with ErrLogCorrupt; Recovery reports what was
	// discarded. Versions carried by the readable records it discards are
	// not handed out again (one only in the damaged record may be). A torn
	// tail (the end of the log cut by a crash) is always cut, and counted
	// in Recovery.TornBytes.
	TruncateCorrupt bool
	// RewritePercent and RewriteMinSize trigger an automatic rewrite
	// (compaction) when the incremental log exceeds RewriteMinSize bytes
	// and RewritePercent percent of the last base. 0 means
	// DefaultRewritePercent and DefaultRewriteMinSize; RewritePercent
	// NoAutoRewrite turns automatic rewrites off. Other negatives are
	// ErrInvalidConfig.
	RewritePercent int
	RewriteMinSize int64
	// RewriteCheckInterval is how often the rewrite goroutine compares the
	// log's size with the thresholds: 0 means 1 s.
	RewriteCheckInterval time.Duration

	fs aof.FS // tests: the file system (fault injection); nil = Dir
}

func (d Durability) enabled() bool { return d.Dir != "" || d.fs != nil }

func (d Durability) resolve() (Durability, error) {
	if !d.enabled() {
		return d, nil
	}
	switch {
	case d.Sync > SyncNo:
		return d, fmt.Errorf("%w: Durability.Sync = %d", ErrInvalidConfig, d.Sync)
	case d.SyncInterval < 0:
		return d, fmt.Errorf("%w: Durability.SyncInterval = %v, want ≥ 0", ErrInvalidConfig, d.SyncInterval)
	case d.RewritePercent < 0 && d.RewritePercent != NoAutoRewrite:
		return d, fmt.Errorf("%w: Durability.RewritePercent = %d, want ≥ 0 or NoAutoRewrite", ErrInvalidConfig, d.RewritePercent)
	case d.RewriteMinSize < 0:
		return d, fmt.Errorf("%w: Durability.RewriteMinSize = %d, want ≥ 0", ErrInvalidConfig, d.RewriteMinSize)
	case d.RewriteCheckInterval < 0:
		return d, fmt.Errorf("%w: Durability.RewriteCheckInterval = %v, want ≥ 0", ErrInvalidConfig, d.RewriteCheckInterval)
	}
	if d.RewritePercent == 0 {
		d.RewritePercent = DefaultRewritePercent
	}
	if d.RewriteMinSize == 0 {
		d.RewriteMinSize = DefaultRewriteMinSize
	}
	if d.RewriteCheckInterval == 0 {
		d.RewriteCheckInterval = time.Second
	}
	return d, nil
}

// durable is an engine's log and the goroutine that rewrites it. The log
// has its own locks; durable's fields are set once by New except those
// noted.
type durable struct {
	log *aof.Log
	cfg Durability
	rep Recovery

	done chan struct{} // closed by Close: the rewrite goroutine stops
	kick chan struct{} // a token: check the thresholds now
	wg   sync.WaitGroup

	rewrites  atomic.Uint64
	rewriteMu sync.Mutex // guards lastErr and the backoff
	lastErr   error      // the last automatic rewrite's error
	// The automatic rewrite's backoff: failures counts consecutive failed
	// automatic rewrites (0 after a success), and the next one waits until
	// retryAt on the engine's clock (see rewriteBackoff). failedAt is when
	// the last one failed: a clock read before it (a clock stepped back)
	// ends the wait rather than stretch it.
	failures          int
	failedAt, retryAt int64

	closeOnce sync.Once
	closeErr  error
}

// shardLog is a shard's part of the log state, guarded by the shard's mu.
type shardLog struct {
	dur *durable // nil: no log; set once by New
	// reserved is the highest version a durable OpVersions record covers:
	// the shard hands out no version above it.
	reserved uint64
	// pending holds removals of evicted entries not yet logged; the next
	// record of the shard carries them (they are version-checked, so a
	// late one never removes a later incarnation).
	pending []aof.Record
}

// logErr wraps an append failure as the engine reports it.
func logErr(err error) error {
	switch {
	case errors.Is(err, aof.ErrClosed):
		return ErrClosed
	case errors.Is(err, aof.ErrFailed):
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return fmt.Errorf("%w: %w", ErrLogWrite, err)
}

// reserveVersionsLocked makes sure the shard may hand out n more versions,
// logging (and fsyncing) a reservation if not.
func (s *shard) reserveVersionsLocked(n uint64) error {
	if s.log.dur == nil || s.version+n <= s.log.reserved {
		return nil
	}
	next := s.version + n + versionBlock
	if err := s.log.dur.log.AppendSync(&aof.Record{Op: aof.OpVersions, Versions: []uint64{next}}); err != nil {
		return logErr(err)
	}
	s.log.reserved = next
	return nil
}

// raiseVersionLocked raises the shard's counter to at least v, first
// reserving the versions up to it durably if the shard logs.
func (s *shard) raiseVersionLocked(v uint64) error {
	if v <= s.version {
		return nil
	}
	if err := s.reserveVersionsLocked(v - s.version); err != nil {
		return err
	}
	s.version = v
	return nil
}

// appendLocked appends recs (with the shard's pending evictions before
// them) as one record: an OpBatch if there is more than one.
func (s *shard) appendLocked(recs ...aof.Record) error {
	var r *aof.Record
	if len(s.log.pending) == 0 && len(recs) == 1 {
		r = &recs[0]
	} else {
		b := make([]aof.Record, 0, len(s.log.pending)+len(recs))
		r = &aof.Record{Op: aof.OpBatch, Batch: append(append(b, s.log.pending...), recs...)}
	}
	if err := s.log.dur.log.Append(r); err != nil {
		return logErr(err)
	}
	s.log.pending = s.log.pending[:0]
	return nil
}

// logSetLocked logs the write that applyWriteLocked is about to make: key
// = value with the next version, deadline and the pinning the entry will
// have.
func (s *shard) logSetLocked(key string, value []byte, deadline int64, pinned bool) error {
	if s.log.dur == nil {
		return nil
	}
	if err := s.reserveVersionsLocked(1); err != nil {
		return err
	}
	return s.appendLocked(aof.Record{Op: aof.OpSet, Key: key, Value: value, Version: s.version + 1, Deadline: deadline, Pinned: pinned})
}

// logRemoveLocked logs the delete of en (version-checked).
func (s *shard) logRemoveLocked(en entry) error {
	if s.log.dur == nil {
		return nil
	}
	return s.appendLocked(aof.Record{Op: aof.OpRemove, Key: string(en.key()), Version: en.version(), Cause: aof.CauseDeleted})
}

// logMetaLocked logs a change of en's deadline or pinning.
func (s *shard) logMetaLocked(en entry, deadline int64, pinned bool) error {
	if s.log.dur == nil {
		return nil
	}
	return s.appendLocked(aof.Record{Op: aof.OpMeta, Key: string(en.key()), Deadline: deadline, Pinned: pinned})
}

// noteEvictedLocked queues the removal of en, being evicted, for the
// shard's next record.
func (s *shard) noteEvictedLocked(en entry) {
	if s.log.dur == nil {
		return
	}
	s.log.pending = append(s.log.pending, aof.Record{Op: aof.OpRemove, Key: string(en.key()), Version: en.version(), Cause: aof.CauseEvicted})
}

// flushEvictedLocked logs the shard's pending evictions, if any. A failure
// keeps them pending.
func (s *shard) flushEvictedLocked() {
	if s.log.dur == nil || len(s.log.pending) == 0 {
		return
	}
	r := aof.Record{Op: aof.OpBatch, Batch: s.log.pending}
	if s.log.dur.log.Append(&r) == nil {
		s.log.pending = s.log.pending[:0]
	}
}

// logCommitLocked logs a commit as one OpBatch: the pending evictions of
// its shards, then its ops in the order commitLocked applies them (order),
// with the versions that order gives, fsynced before it returns if an op
// asks for Sync. plan returns where op i lands.
func (e *Engine) logCommitLocked(ops []Op, hashes []uint64, order []int, plan func(i int) (s *shard, slot uint32, found bool, deadline int64)) error {
	if e.dur == nil {
		return nil
	}
	next := map[*shard]uint64{}
	for _, i := range order {
		if !ops[i].Delete {
			s, _, _, _ := plan(i)
			next[s]++
		}
	}
	for s, n := range next {
		if err := s.reserveVersionsLocked(n); err != nil {
			return err
		}
		next[s] = s.version
	}
	shards := lockedShards(e, hashes)
	var batch []aof.Record
	for _, i := range shards {
		batch = append(batch, e.shards[i].log.pending...)
	}
	for _, i := range order {
		op := ops[i]
		s, slot, found, deadline := plan(i)
		if op.Delete {
			if found {
				batch = append(batch, aof.Record{Op: aof.OpRemove, Key: op.Key, Version: s.at(slot).version(), Cause: aof.CauseDeleted})
			}
			continue
		}
		next[s]++
		pinned := op.Pin || found && s.at(slot).flags()&flagPinned != 0
		batch = append(batch, aof.Record{Op: aof.OpSet, Key: op.Key, Value: op.Value, Version: next[s], Deadline: deadline, Pinned: pinned})
	}
	if len(batch) == 0 {
		return nil
	}
	r := &aof.Record{Op: aof.OpBatch, Batch: batch}
	appendRecord := e.dur.log.Append
	if slices.ContainsFunc(ops, func(op Op) bool { return op.Sync }) {
		appendRecord = e.dur.log.AppendSync
	}
	if err := appendRecord(r); err != nil {
		return logErr(err)
	}
	for _, i := range shards {
		e.shards[i].log.pending = e.shards[i].log.pending[:0]
	}
	return nil
}

// DeleteOptions modify DeleteWith.
type DeleteOptions struct {
	// IfVersion, unless AnyVersion, deletes the key only if its current
	// version is exactly this (CompareAndDelete).
	IfVersion uint64
	// Load returns the deleted value (GetAndDelete).
	Load bool
}

// DeleteWith removes key as modified by o and reports whether it did,
// with the removed value if o.Load. Unlike Delete, it reports why a delete
// failed: ErrKeyTooLarge, ErrClosed, or ErrLogWrite or ErrLogFailed if its
// record could not be logged (the key is then unchanged).
func (e *Engine) DeleteWith(key string, o DeleteOptions) (value []byte, deleted bool, err error) {
	if err := e.checkCall(key); err != nil {
		return nil, false, err
	}
	return e.remove(key, o.IfVersion, o.Load)
}

// Recovery reports what New replayed from the durability log.
type Recovery struct {
	// Records is the number of log records replayed (a Commit counts once,
	// a base's entries one each); Files the number of log files read.
	Records, Files int
	// Entries is the number of entries restored.
	Entries int
	// Due counts entries not restored because their deadline had passed at
	// recovery (on the engine's clock).
	Due int
	// TornBytes is the size of the torn tail cut from the log: the remains
	// of a write a crash interrupted, never acknowledged under SyncAlways.
	TornBytes int64
	// Corruption is where Durability.TruncateCorrupt cut the log (an
	// error matching ErrLogCorrupt and naming the file and offset), or
	// nil; DiscardedBytes is how much it discarded.
	Corruption     error
	DiscardedBytes int64
	// Evicted counts entries evicted after the replay to bring the engine
	// under MaxBytes (evictions whose records a crash lost, or a smaller
	// cap than before).
	Evicted int
	// MaxVersion is the highest version the log recorded or reserved:
	// every shard hands out versions above it.
	MaxVersion uint64
	// Duration is how long the recovery took.
	Duration time.Duration
}

// Recovery returns what New replayed from the durability log (the zero
// Recovery without one).
func (e *Engine) Recovery() Recovery {
	if e.dur == nil {
		return Recovery{}
	}
	return e.dur.rep
}

// LogStats describes the durability log.
type LogStats struct {
	Enabled bool
	Sync    SyncPolicy
	// BaseBytes and IncrBytes are the sizes of the base (the last
	// rewrite's snapshot) and of the incremental logs after it.
	BaseBytes, IncrBytes int64
	// Rewrites counts completed rewrites; RewriteErr is the error of the
	// last automatic rewrite that failed, nil if the last one succeeded.
	// RewriteFailures counts the automatic rewrites that failed since the
	// last success: each doubles the wait before the next automatic
	// attempt (from 1 s up to 5 min on the engine's clock; the log keeps
	// its files and every acknowledged write meanwhile).
	Rewrites        uint64
	RewriteErr      error
	RewriteFailures int
	// Err is the error that failed the log (matching ErrLogFailed), after
	// which every write fails until the engine is reopened.
	Err error
}

// LogStats returns the durability log's state.
func (e *Engine) LogStats() LogStats {
	d := e.dur
	if d == nil {
		return LogStats{}
	}
	st := LogStats{Enabled: true, Sync: d.cfg.Sync, Rewrites: d.rewrites.Load()}
	st.BaseBytes, st.IncrBytes = d.log.Size()
	d.rewriteMu.Lock()
	st.RewriteErr, st.RewriteFailures = d.lastErr, d.failures
	d.rewriteMu.Unlock()
	if err := d.log.Err(); err != nil {
		st.Err = fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return st
}

// Rewrite compacts the durability log now: it writes the live entries as a
// new base, shard by shard while writes continue (each shard is read-locked
// for one batch of entries at a time), and drops the log files the base
// supersedes. Every step is crash-safe (see docs/DURABILITY.md). Errors:
// ErrNoLog without a log, ErrRewriteBusy while another rewrite runs,
// ErrClosed, and I/O errors (the log keeps its old files and stays
// usable). It does not wait for the automatic rewrites' backoff, and its
// success resets it.
func (e *Engine) Rewrite() error {
	if e.dur == nil {
		return ErrNoLog
	}
	if e.closed.Load() {
		return ErrClosed
	}
	_, err := e.dur.log.Rewrite(source{e})
	switch {
	case err == nil:
		e.dur.rewrites.Add(1)
		e.dur.rewriteMu.Lock()
		e.dur.failures, e.dur.retryAt = 0, 0
		e.dur.rewriteMu.Unlock()
		return nil
	case errors.Is(err, aof.ErrBusy):
		return ErrRewriteBusy
	case errors.Is(err, aof.ErrClosed):
		return ErrClosed
	}
	return fmt.Errorf("%w: rewrite: %w", ErrLogWrite, err)
}

// rewriteLoop is the rewrite goroutine, owned by the engine: it rewrites
// the log when it outgrows the thresholds and no failure's backoff is
// running, until Close.
func (e *Engine) rewriteLoop() {
	d := e.dur
	defer d.wg.Done()
	t := time.NewTicker(d.cfg.RewriteCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-t.C:
		case <-d.kick:
		}
		if !d.rewriteDue(d.log.Size()) || d.backingOff(e.clock.Now()) {
			continue
		}
		err := e.Rewrite()
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrRewriteBusy) {
			continue
		}
		d.rewriteMu.Lock()
		d.lastErr = err
		if err != nil {
			d.failures++
			d.failedAt = e.clock.Now()
			if wait := int64(rewriteBackoff(d.failures)); d.failedAt > math.MaxInt64-wait {
				d.retryAt = math.MaxInt64
			} else {
				d.retryAt = d.failedAt + wait
			}
		}
		d.rewriteMu.Unlock()
	}
}

// backingOff reports whether the automatic rewrite waits at now for the
// backoff of a failure.
func (d *durable) backingOff(now int64) bool {
	d.rewriteMu.Lock()
	defer d.rewriteMu.Unlock()
	return d.failures > 0 && now < d.retryAt && now >= d.failedAt
}

// rewriteDue reports whether a log of base and incr bytes passes the
// automatic rewrite's thresholds: incr ≥ RewriteMinSize and incr ≥
// RewritePercent% of base, compared in 128 bits (a huge percentage means
// "rarely", never an overflow into "always").
func (d *durable) rewriteDue(base, incr int64) bool {
	if incr < d.cfg.RewriteMinSize {
		return false
	}
	ih, il := bits.Mul64(uint64(incr), 100)
	bh, bl := bits.Mul64(uint64(base), uint64(d.cfg.RewritePercent))
	return ih > bh || ih == bh && il >= bl
}

// closeLog stops the rewrite goroutine, logs the shards' pending
// evictions and closes the log (waiting for a running rewrite). Close
// calls it before it releases the shards, so a rewrite never reads a
// released shard. It returns the same result every time.
func (e *Engine) closeLog() error {
	d := e.dur
	if d == nil {
		return nil
	}
	d.closeOnce.Do(func() {
		close(d.done)
		d.wg.Wait()
		for i := range e.shards {
			s := &e.shards[i]
			s.mu.Lock()
			s.flushEvictedLocked()
			s.mu.Unlock()
		}
		if err := d.log.Close(); err != nil {
			d.closeErr = logErr(err)
		}
	})
	return d.closeErr
}

// source is the engine as an aof.Source: what a rewrite's base and a
// snapshot hold.
type source struct{ e *Engine }

// Versions returns every shard's version high-water mark (its
// reservation, if higher).
func (src source) Versions() []uint64 {
	vs := make([]uint64, len(src.e.shards))
	for i := range src.e.shards {
		s := &src.e.shards[i]
		s.mu.RLock()
		vs[i] = max(s.version, s.log.reserved)
		s.mu.RUnlock()
	}
	return vs
}

// Records emits an OpSet for every live entry not due, shard by shard, a
// batch at a time: each batch is copied under the shard's read lock and
// emitted outside it.
func (src source) Records(emit func(*aof.Record) error) error {
	e := src.e
	const batch = 512
	buf := make([]aof.Record, 0, batch)
	var arena []byte
	for i := range e.shards {
		s := &e.shards[i]
		for next := 0; ; {
			buf, arena = buf[:0], arena[:0]
			s.mu.RLock()
			if s.closed {
				s.mu.RUnlock()
				return ErrClosed
			}
			now := e.now()
			for ; next < s.ents.len() && len(buf) < batch; next++ {
				if s.ents.get(uint32(next)) == 0 {
					continue
				}
				en := s.at(uint32(next))
				if d := en.deadline(); d != 0 && d <= now {
					continue
				}
				buf = append(buf, aof.Record{Op: aof.OpSet, Version: en.version(), Deadline: en.deadline(), Pinned: en.flags()&flagPinned != 0,
					Key: string(en.key()), Value: en.value()})
				// Copy the value: the arena may change once unlocked.
				start := len(arena)
				arena = append(arena, en.value()...)
				buf[len(buf)-1].Value = arena[start:len(arena):len(arena)]
			}
			end := next >= s.ents.len()
			s.mu.RUnlock()
			for j := range buf {
				if err := emit(&buf[j]); err != nil {
					return err
				}
			}
			if end {
				break
			}
		}
	}
	return nil
}
