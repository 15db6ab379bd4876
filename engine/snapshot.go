package engine

import (
	"errors"
	"fmt"
	"io"

	"github.com/tidekv/tide/internal/aof"
)

// Snapshot writes the engine's live entries (value, version, deadline,
// pinning) and version counters to w in tide's snapshot format: a
// checksummed stream ending in a marker with the entry count, so that
// Restore detects a snapshot cut short or damaged. It works with any
// io.Writer (a file, an object store upload); w is written sequentially,
// so wrap a file in a bufio.Writer and flush and sync it after.
//
// The snapshot is taken shard by shard, a batch of entries at a time under
// the shard's read lock, while writes continue: it is consistent per key
// (each entry as it was at some instant), not a point in time across keys
// (use a Commit to change keys that must be seen together). Entries due
// when their shard is read are left out. It returns the number of entries
// written.
func (e *Engine) Snapshot(w io.Writer) (int, error) {
	if e.closed.Load() {
		return 0, ErrClosed
	}
	return aof.WriteSnapshot(w, source{e})
}

// Restore reads a snapshot written by Snapshot and stores its entries,
// each with its version, deadline and pinning; entries due at the engine's
// now are skipped, keys the snapshot does not hold are left as they are,
// and every shard's version counter rises above the snapshot's highest
// version (durably, with a log), so versions handed out later are new.
// An entry keeps the snapshot's version only if it is above every version
// its shard handed out before the Restore (always, in a fresh engine);
// otherwise it gets a new one, so that no caller holding a version of this
// engine matches a restored entry. As a Set would, it reports to
// Config.OnRemove the values it replaces and the due entries it finds.
//
// The whole snapshot is read and verified before anything is stored (it
// is held in memory meanwhile): a snapshot that is damaged or cut short,
// or carries a version above 2^62 (no engine hands one out; taking it
// could wrap the counters), is ErrLogCorrupt and restores nothing. With
// MaxBytes, so is, as ErrOutOfMemory, one whose entries not due at the
// start (each key's last record) account more than MaxBytes: it is
// refused once what it holds passes the cap, so Restore holds at most
// about MaxBytes of it.
// Storing then writes each entry (logged first, with a log) and may stop
// at ErrOutOfMemory (an entry that does not fit under MaxBytes; Restore
// evicts nothing), ErrTooLarge, ErrKeyTooLarge, ErrLogWrite, ErrLogFailed
// or ErrClosed, after the entries before it were stored. It returns the
// number of entries stored.
func (e *Engine) Restore(r io.Reader) (int, error) {
	if e.closed.Load() {
		return 0, ErrClosed
	}
	var recs []aof.Record
	var maxV uint64
	// With MaxBytes, what the entries not due at the start account (each
	// key once, its last record) may not pass it: Restore evicts nothing,
	// so such a snapshot could only stop at ErrOutOfMemory part way. It is
	// refused as soon as its records pass the cap, with nothing stored,
	// holding no more than the cap's worth of them.
	var held int64
	var last map[string]int // key → index in recs, with MaxBytes only
	if e.b != nil {
		last = map[string]int{}
	}
	now := e.now()
	err := aof.ReadSnapshot(r, func(rec *aof.Record) error {
		switch rec.Op {
		case aof.OpVersions:
			for _, v := range rec.Versions {
				maxV = max(maxV, v)
			}
		case aof.OpSet:
			maxV = max(maxV, rec.Version)
			if rec.Deadline != 0 && rec.Deadline <= now {
				return nil // due: it would be skipped
			}
			// The record aliases the reader's buffer: copy its value.
			c := *rec
			c.Value = append([]byte(nil), rec.Value...)
			if last == nil {
				recs = append(recs, c)
				return nil
			}
			if i, ok := last[c.Key]; ok {
				held -= int64(len(recs[i].Key)) + int64(len(recs[i].Value)) + EntryOverhead
				recs[i] = c
			} else {
				last[c.Key] = len(recs)
				recs = append(recs, c)
			}
			if held += int64(len(c.Key)) + int64(len(c.Value)) + EntryOverhead; held > e.b.max {
				return fmt.Errorf("%w: the snapshot's entries account more than MaxBytes (%d)", ErrOutOfMemory, e.b.max)
			}
		}
		return nil
	})
	if errors.Is(err, ErrOutOfMemory) {
		return 0, fmt.Errorf("tide: restore: %w", err)
	}
	if err != nil {
		if errors.Is(err, aof.ErrCorrupt) {
			return 0, fmt.Errorf("%w: snapshot: %w", ErrLogCorrupt, err)
		}
		return 0, fmt.Errorf("tide: restore: %w", err)
	}
	if maxV > versionLimit {
		return 0, fmt.Errorf("%w: snapshot: version %d above the limit %d", ErrLogCorrupt, maxV, uint64(versionLimit))
	}
	// Raise every counter first (durably, with a log), so that no write
	// made during the restore, nor after a crash that loses the restored
	// entries' records, takes a version the snapshot holds. floors keeps
	// what each shard had handed out before: a snapshot entry at or below
	// it takes a new version instead of its own, as a caller of this engine
	// may hold that number for another value of the key.
	floors := make([]uint64, len(e.shards))
	for i := range e.shards {
		s := &e.shards[i]
		s.mu.Lock()
		floors[i] = s.version
		err := s.raiseVersionLocked(maxV)
		s.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	n := 0
	for i := range recs {
		stored, err := e.restoreOne(&recs[i], floors)
		if err != nil {
			return n, err
		}
		if stored {
			n++
		}
	}
	return n, nil
}

// restoreOne stores a snapshot entry as recorded, logging it first: with
// its version if that is above floors[shard] (what the shard handed out
// before the Restore), else with the shard's next version. An entry due
// now is skipped. Like every write it reports its removals (a due entry
// found, the value it replaces) to the listener, with no lock held.
func (e *Engine) restoreOne(r *aof.Record, floors []uint64) (stored bool, err error) {
	if err := e.checkKey(r.Key); err != nil {
		return false, err
	}
	s, h := e.shardFor(r.Key)
	var op locked
	for op.lock(e, s) {
		stored, err = s.restoreLocked(r, h, floors[h&e.mask], op.clk.get(), &op.r, op.events())
		err = op.unlock(err)
	}
	return stored && err == nil, err
}

// restoreLocked is restoreOne under the shard's exclusive lock. It makes
// no room: a restored entry that does not fit under MaxBytes is
// ErrOutOfMemory.
func (s *shard) restoreLocked(r *aof.Record, h uint64, floor uint64, now int64, rm *room, ev *[]Removal) (stored bool, err error) {
	if s.closed {
		return false, ErrClosed
	}
	if r.Deadline != 0 && r.Deadline <= now {
		return false, nil
	}
	if err := s.b.checkSize(len(r.Key), len(r.Value)); err != nil {
		return false, err
	}
	if err := s.arenaRoomLocked(int64(recSize(len(r.Key), len(r.Value), flagDeadline))); err != nil {
		return false, err
	}
	if r.Version <= floor {
		if err := s.reserveVersionsLocked(1); err != nil {
			return false, err
		}
		c := *r
		c.Version = s.version + 1
		r = &c
	}
	slot, found := s.lookupLocked(r.Key, h, now, ev)
	var old int64
	if found {
		old = s.at(slot).size()
	}
	grow := int64(len(r.Key)) + int64(len(r.Value)) + EntryOverhead - old
	if s.b != nil && grow > 0 && !s.b.has(rm, grow) {
		return false, fmt.Errorf("%w: restoring %q", ErrOutOfMemory, r.Key)
	}
	if s.log.dur != nil {
		if err := s.appendLocked(*r); err != nil {
			return false, err
		}
	}
	if s.b != nil {
		if grow > 0 {
			rm.held -= grow // the entry's new bytes: kept, not given back
		} else {
			s.b.used.Add(grow)
		}
	}
	s.putLocked(r, h, ev)
	return true, nil
}
