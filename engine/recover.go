package engine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tidekv/tide/internal/aof"
)

// openLog opens the durability log of cfg and replays it into the engine,
// which New has built but not started: no other goroutine touches the
// shards yet. Records apply as written; then entries due at the engine's
// now are removed (Recovery.Due), every shard's version counter resumes at
// Recovery.MaxVersion, and if the engine is over MaxBytes (evictions a
// crash did not let reach the log) it evicts, logging the evictions.
func (e *Engine) openLog(cfg Durability) error {
	if !cfg.enabled() {
		return nil
	}
	start := time.Now()
	d := &durable{cfg: cfg, done: make(chan struct{}), kick: make(chan struct{}, 1)}
	acfg := aof.Config{Dir: cfg.Dir, FS: cfg.fs, Sync: aof.SyncPolicy(0), SyncInterval: cfg.SyncInterval, TruncateCorrupt: cfg.TruncateCorrupt}
	switch cfg.Sync {
	case SyncAlways:
		acfg.Sync = aof.SyncAlways
	case SyncNo:
		acfg.Sync = aof.SyncNo
	default:
		acfg.Sync = aof.SyncEverySecond
	}
	for i := range e.shards {
		e.shards[i].bulk = true
	}
	acfg.BaseSize = e.presize
	l, rep, err := aof.Open(acfg, e.now(), e.replay)
	if err != nil {
		switch {
		case errors.Is(err, ErrLogCorrupt):
			return err
		case errors.Is(err, aof.ErrCorrupt):
			return fmt.Errorf("%w: %w", ErrLogCorrupt, err)
		case errors.Is(err, aof.ErrLocked):
			return fmt.Errorf("%w: %w", ErrLogLocked, err)
		}
		return fmt.Errorf("%w: %w", ErrLogOpen, err)
	}
	if rep.MaxVersion > versionLimit {
		l.Close()
		return fmt.Errorf("%w: version %d above the limit %d", ErrLogCorrupt, rep.MaxVersion, uint64(versionLimit))
	}
	if e.b != nil {
		e.b.used.Store(e.b.resident.Load())
	}
	d.log = l
	d.rep = Recovery{
		Records: rep.Records, Files: rep.Files, Due: rep.Due, TornBytes: rep.TornBytes,
		DiscardedBytes: rep.DiscardedBytes, MaxVersion: rep.MaxVersion,
	}
	if rep.Corruption != nil {
		d.rep.Corruption = fmt.Errorf("%w: %w", ErrLogCorrupt, rep.Corruption)
	}
	for i := range e.shards {
		s := &e.shards[i]
		s.log.dur = d
		s.version, s.log.reserved = rep.MaxVersion, rep.MaxVersion
		// Replay counted its removals and writes: the counters start
		// from zero, as in a fresh engine.
		s.writes, s.expired, s.evicted, s.deleted, s.replaced = 0, 0, 0, 0, 0
		d.rep.Entries += s.live
	}
	e.dur = d
	if e.b != nil && e.b.used.Load() > e.b.max {
		n, err := e.evictToFit()
		d.rep.Evicted = n
		d.rep.Entries -= n
		if err != nil {
			e.closeLog()
			return err
		}
	}
	for i := range e.shards {
		s := &e.shards[i]
		s.mu.Lock()
		s.trimLocked()
		s.maybeShrinkLocked()
		s.mu.Unlock() // publishes the arrays
	}
	d.rep.Duration = time.Since(start)
	if cfg.RewritePercent != NoAutoRewrite {
		d.wg.Add(1)
		go e.rewriteLoop()
	}
	return nil
}

// evictToFit evicts entries until the engine is under MaxBytes, logging
// the evictions. It takes the shards in rounds, each shard evicting its
// policy's victims until it has given back its share of the excess, so
// that the cut falls on every shard's least valuable entries rather than
// on whole shards. It fails with ErrOutOfMemory, before evicting anything,
// if the entries that may not be evicted exceed the cap.
func (e *Engine) evictToFit() (int, error) {
	if fixed := e.b.used.Load() - e.b.evictable.Load(); fixed > e.b.max {
		// Checked first, so that a recovery that cannot succeed does not
		// evict (and log the evictions of) what it could.
		return 0, fmt.Errorf("%w: the log holds %d bytes that may not be evicted, MaxBytes is %d", ErrOutOfMemory, fixed, e.b.max)
	}
	n := 0
	now := e.now()
	for {
		excess := e.b.used.Load() - e.b.max
		if excess <= 0 {
			return n, nil
		}
		share := excess/int64(len(e.shards)) + 1
		progress := false
		for i := range e.shards {
			s := &e.shards[i]
			s.mu.Lock()
			target := e.b.used.Load() - share
			for e.b.used.Load() > max(target, e.b.max) && s.pol != nil && s.evictb > 0 && s.evictOneLocked(now, nil) {
				n++
				progress = true
			}
			s.maybeShrinkLocked()
			var err error
			if len(s.log.pending) > 0 {
				r := aof.Record{Op: aof.OpBatch, Batch: s.log.pending}
				if err = e.dur.log.Append(&r); err == nil {
					s.log.pending = s.log.pending[:0]
				}
			}
			s.mu.Unlock()
			if err != nil {
				return n, logErr(err)
			}
		}
		if !progress {
			return n, fmt.Errorf("%w: the log holds %d bytes that may not be evicted, MaxBytes is %d", ErrOutOfMemory, e.b.used.Load(), e.b.max)
		}
	}
}

// replay applies one record of the log. It runs before the engine starts
// (single goroutine); it takes the shard lock all the same, for the
// invariants the helpers assume.
// presize gives every shard an arena for its share of a base of n bytes
// (a base record is about as long as the arena record it becomes), bounded
// by MaxBytes: the live data set streams in without a single arena move.
// Capacity the replay does not use costs address space, not memory, until
// trimLocked gives it back.
//
// Not on 32-bit platforms: there, reserving address space for a base that
// then fails its read (a damaged file whose end frame happens to be
// intact) could exhaust the address space instead of returning
// ErrLogCorrupt.
func (e *Engine) presize(n int64) {
	if math.MaxInt == math.MaxInt32 {
		return
	}
	if e.b != nil {
		n = min(n, e.b.max)
	}
	per := n / int64(len(e.shards))
	per = min(per+per/16, maxArena/2)
	for i := range e.shards {
		if s := &e.shards[i]; len(s.arena) == 0 && int64(cap(s.arena)) < per {
			s.arena = newArena(int(per))
		}
	}
}

func (e *Engine) replay(r *aof.Record) error {
	switch r.Op {
	case aof.OpSet:
		return e.replaySet(r)
	case aof.OpRemove:
		e.replayRemove(r)
	case aof.OpMeta:
		return e.replayMeta(r)
	case aof.OpBatch:
		for i := range r.Batch {
			if err := e.replay(&r.Batch[i]); err != nil {
				return err
			}
		}
	case aof.OpVersions:
		// Recovery.MaxVersion covers it.
	}
	return nil
}

// replaySet stores the record's entry exactly: value, version, deadline
// and pinning. Resident bytes are accounted; openLog sets the budget's
// used bytes from them after the replay (evictToFit settles an excess).
// An entry this engine could not have stored — a key over MaxKeySize
// (lowered since the log was written), an entry over MaxEntrySize, a
// shard arena past its limit (fewer shards than before) — fails the
// recovery with the error the write would have had: stored anyway, the
// key could never be read or deleted, or the arena's offsets would wrap.
func (e *Engine) replaySet(r *aof.Record) error {
	if r.Version == aof.NoVersion {
		// No engine writes one: a crafted or miswritten log.
		return fmt.Errorf("%w: a set of a %d-byte key without a version", ErrLogCorrupt, len(r.Key))
	}
	if len(r.Key) > e.maxKey {
		return fmt.Errorf("%w: the log holds a key of %d bytes, MaxKeySize is %d", ErrKeyTooLarge, len(r.Key), e.maxKey)
	}
	if kv := int64(len(r.Key)) + int64(len(r.Value)); kv > MaxEntrySize {
		return fmt.Errorf("%w: the log holds an entry of %d bytes, MaxEntrySize is %d", ErrTooLarge, kv, MaxEntrySize)
	}
	s, h := e.shardFor(r.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.arenaRoomLocked(int64(recSize(len(r.Key), len(r.Value), flagDeadline))); err != nil {
		return fmt.Errorf("replaying the log: %w; use more shards", err)
	}
	s.putLocked(r, h, nil)
	return nil
}

// putLocked stores r (an OpSet) exactly as recorded, keeping the shard's
// counter at least r.Version, and records the value it replaces in ev
// (nil: none). The caller accounts the budget's used bytes.
// It looks the key up once: applyWriteLocked gives the entry the counter's
// next version, so the counter is set just below r.Version for the call.
func (s *shard) putLocked(r *aof.Record, h uint64, ev *[]Removal) {
	slot, found := s.findLocked(r.Key, h)
	counter := s.version
	s.version = r.Version - 1
	s.applyWriteLocked(r.Key, h, slot, found, r.Value, r.Deadline, r.Pinned, ev)
	s.version = max(counter, r.Version) // openLog sets every counter to MaxVersion
	if found && !r.Pinned {
		// applyWriteLocked keeps a pinned entry pinned; a new entry has
		// only the pinning it was given.
		if en := s.at(slot); en.flags()&flagPinned != 0 {
			en.setFlags(en.flags() &^ flagPinned)
			s.syncPolicyLocked(en, h, en.size(), false)
		}
	}
}

func (e *Engine) replayRemove(r *aof.Record) {
	s, h := e.shardFor(r.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.findLocked(r.Key, h)
	if !ok || r.Version != aof.NoVersion && s.at(slot).version() != r.Version {
		return
	}
	cause := CauseDeleted
	switch r.Cause {
	case aof.CauseExpired:
		cause = CauseExpired
	case aof.CauseEvicted:
		cause = CauseEvicted
	}
	s.removeLocked(slot, h, cause, nil)
}

// replayMeta applies a change of deadline or pinning. One that would move
// a record past the shard's arena limit (see deadlineRoomLocked) fails
// the recovery, as such a set does (replaySet).
func (e *Engine) replayMeta(r *aof.Record) error {
	s, h := e.shardFor(r.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.findLocked(r.Key, h)
	if !ok {
		return nil
	}
	en := s.at(slot)
	if err := s.deadlineRoomLocked(en, r.Deadline); err != nil {
		return fmt.Errorf("replaying the log: %w; use more shards", err)
	}
	size := en.size()
	en = s.setDeadlineLocked(en, r.Deadline)
	if r.Pinned {
		en.setFlags(en.flags() | flagPinned)
	} else {
		en.setFlags(en.flags() &^ flagPinned)
	}
	s.syncPolicyLocked(en, h, size, false)
	return nil
}
