package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// indexEntry is one session in a user's index.
type indexEntry struct {
	Handle   string    `json:"h"`
	Deadline time.Time `json:"d"`
	// Added is when the entry was written, just before its record: an
	// entry without a record younger than pendingGrace may belong to a
	// Create in flight, so List does not prune it.
	Added time.Time `json:"a"`
}

// pendingGrace is how long an index entry without a record is presumed to
// belong to a Create in flight (its next write is the record).
const pendingGrace = time.Minute

func (m *Manager) indexKey(userID string) string {
	return m.cfg.Prefix + "user:" + handle(userID)
}

func (m *Manager) readIndex(ctx context.Context, userID string) ([]indexEntry, uint64, error) {
	if userID == "" { // anonymous sessions have no index
		return nil, 0, nil
	}
	it, ok, err := m.cfg.Backend.Get(ctx, m.indexKey(userID))
	if !ok || err != nil {
		return nil, 0, err
	}
	var idx []indexEntry
	if err := json.Unmarshal(it.Value, &idx); err != nil {
		return nil, 0, fmt.Errorf("%w: session index: %v", store.ErrCorrupt, err)
	}
	return idx, it.Version, nil
}

// modifyIndex applies fn to userID's index with a CAS loop; entries past
// their deadline are dropped, and the index expires with its last entry.
// Anonymous sessions (userID "") have no index. An error from fn ends the
// loop with nothing written.
func (m *Manager) modifyIndex(ctx context.Context, userID string, fn func([]indexEntry, time.Time) ([]indexEntry, error)) error {
	if userID == "" {
		return nil
	}
	for {
		idx, v, err := m.readIndex(ctx, userID)
		if err != nil {
			return err
		}
		now, err := m.cfg.Backend.Now(ctx)
		if err != nil {
			return err
		}
		idx = slices.DeleteFunc(idx, func(e indexEntry) bool { return !e.Deadline.After(now) })
		if idx, err = fn(idx, now); err != nil {
			return err
		}
		var ok bool
		if len(idx) == 0 {
			if v == 0 {
				return nil
			}
			ok, err = m.cfg.Backend.CompareAndDelete(ctx, m.indexKey(userID), v)
		} else {
			last := idx[0].Deadline
			for _, e := range idx {
				if e.Deadline.After(last) {
					last = e.Deadline
				}
			}
			enc, _ := json.Marshal(idx)
			// last is after now (due entries were dropped above), so the
			// TTL is at least 1 ns: an index whose entries are all due is
			// deleted above, never written with a TTL of 0.
			// Pinned whatever Config.Pin says (see "Eviction"): an
			// index evicted while its sessions live would hide them
			// from DestroyAll and from MaxUserSessions.
			o := store.SetOptions{TTL: last.Sub(now), Pin: true}
			if v == 0 {
				o.IfAbsent = true
			} else {
				o.IfVersion = v
			}
			_, ok, err = m.cfg.Backend.Set(ctx, m.indexKey(userID), enc, o)
		}
		if err != nil || ok {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// indexAdd adds h to userID's index, making room first if the index is
// full (see makeRoom). replacing, if not "", is the handle of a session the
// caller revokes once h is written (Rotate, a re-login): it is neither
// counted nor evicted.
func (m *Manager) indexAdd(ctx context.Context, userID, h string, deadline time.Time, replacing string) error {
	// The sessions this call revoked to make room: a CAS retry reads them
	// again, recordless but younger than pendingGrace, and must not take
	// them for Creates in flight.
	evicted := map[string]bool{}
	return m.modifyIndex(ctx, userID, func(idx []indexEntry, now time.Time) ([]indexEntry, error) {
		idx, err := m.makeRoom(ctx, userID, idx, now, replacing, evicted)
		if err != nil {
			return nil, err
		}
		return append(idx, indexEntry{Handle: h, Deadline: deadline, Added: now}), nil
	})
}

// makeRoom returns idx with room for one more entry: at most
// MaxUserSessions−1 entries besides replacing. If idx is full it visits the
// entries oldest first, and drops those whose session is gone (no record
// and older than pendingGrace, or a record that is not this user's), then
// revokes the oldest live sessions, and those whose record the Codec
// cannot decode (record first, then entry, so that no session ever leaves
// the index while its record exists) until there is room. An entry
// without a record younger than pendingGrace may be a Create in flight: it
// stays, and if only such entries are left, makeRoom fails with
// ErrTooManySessions.
func (m *Manager) makeRoom(ctx context.Context, userID string, idx []indexEntry, now time.Time, replacing string, evicted map[string]bool) ([]indexEntry, error) {
	count := func() int {
		n := len(idx)
		if replacing != "" && slices.ContainsFunc(idx, func(e indexEntry) bool { return e.Handle == replacing }) {
			n--
		}
		return n
	}
	n := count()
	if n < m.cfg.MaxUserSessions {
		return idx, nil
	}
	slices.SortStableFunc(idx, func(a, b indexEntry) int { return a.Added.Compare(b.Added) })
	drop := map[string]bool{}
	for _, e := range idx {
		if n < m.cfg.MaxUserSessions {
			break
		}
		if e.Handle == replacing {
			continue
		}
		if evicted[e.Handle] {
			drop[e.Handle] = true
			n--
			continue
		}
		it, ok, err := m.cfg.Backend.Get(ctx, m.key(e.Handle))
		if err != nil {
			return nil, err
		}
		if !ok {
			if now.Sub(e.Added) > pendingGrace {
				drop[e.Handle] = true
				n--
			}
			continue
		}
		// A record this Codec cannot decode (another Codec's, before a
		// change of Codec) is revoked like a live session: dropped
		// unrevoked, it would be a session in no index once the Codec
		// that reads it is back.
		var r Record
		if m.cfg.Codec.Unmarshal(it.Value, &r) == nil && r.UserID != userID {
			drop[e.Handle] = true // not this user's session
			n--
			continue
		}
		deleted, err := m.cfg.Backend.Delete(ctx, m.key(e.Handle))
		if err != nil {
			return nil, err
		}
		if deleted {
			m.evicted.Add(1)
		}
		evicted[e.Handle] = true
		drop[e.Handle] = true
		n--
	}
	if n >= m.cfg.MaxUserSessions {
		return nil, ErrTooManySessions
	}
	return slices.DeleteFunc(idx, func(e indexEntry) bool { return drop[e.Handle] }), nil
}

func (m *Manager) indexRemove(ctx context.Context, userID string, hs ...string) error {
	return m.modifyIndex(ctx, userID, func(idx []indexEntry, _ time.Time) ([]indexEntry, error) {
		return slices.DeleteFunc(idx, func(e indexEntry) bool { return slices.Contains(hs, e.Handle) }), nil
	})
}
