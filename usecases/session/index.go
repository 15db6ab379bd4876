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
// Anonymous sessions (userID "") have no index.
func (m *Manager) modifyIndex(ctx context.Context, userID string, fn func([]indexEntry) []indexEntry) error {
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
		idx = slices.DeleteFunc(fn(idx), func(e indexEntry) bool { return !e.Deadline.After(now) })
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
			o := store.SetOptions{TTL: last.Sub(now), Pin: m.cfg.Pin}
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

func (m *Manager) indexAdd(ctx context.Context, userID, h string, deadline, now time.Time) error {
	return m.modifyIndex(ctx, userID, func(idx []indexEntry) []indexEntry {
		return append(idx, indexEntry{Handle: h, Deadline: deadline, Added: now})
	})
}

func (m *Manager) indexRemove(ctx context.Context, userID string, hs ...string) error {
	return m.modifyIndex(ctx, userID, func(idx []indexEntry) []indexEntry {
		return slices.DeleteFunc(idx, func(e indexEntry) bool { return slices.Contains(hs, e.Handle) })
	})
}
