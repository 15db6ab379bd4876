package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// PerKeyBackend is an in-memory backend for adapter tests whose versions
// count per key, as the store contract allows (a version is never reused
// for its key; versions of different keys are not ordered and may be
// equal, as Redis's per-slot counters make them): an adapter that
// compares versions across keys, or trusts a version where it should
// check a key, fails on it where the embedded backend's engine-wide
// versions hide the mistake. It has the primitives (no TTLs: every item
// is stored without one) and FlagWrite, and a fixed clock. Safe for
// concurrent use.
type PerKeyBackend struct {
	mu   sync.Mutex
	vals map[string]store.Item
	ver  map[string]uint64
}

// NewPerKeyBackend returns an empty PerKeyBackend.
func NewPerKeyBackend() *PerKeyBackend {
	return &PerKeyBackend{vals: map[string]store.Item{}, ver: map[string]uint64{}}
}

// Now returns a fixed time.
func (b *PerKeyBackend) Now(context.Context) (time.Time, error) {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil
}

// Get returns key's item.
func (b *PerKeyBackend) Get(_ context.Context, key string) (store.Item, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	it, ok := b.vals[key]
	return it, ok, nil
}

// Set writes key under o's conditions (its TTL is ignored).
func (b *PerKeyBackend) Set(_ context.Context, key string, value []byte, o store.SetOptions) (uint64, bool, error) {
	if err := o.Validate(); err != nil {
		return 0, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	it, ok := b.vals[key]
	if o.IfAbsent && ok || o.IfVersion != 0 && it.Version != o.IfVersion {
		return 0, false, nil
	}
	return b.putLocked(key, value), true, nil
}

// CompareAndDelete deletes key if its version is version.
func (b *PerKeyBackend) CompareAndDelete(_ context.Context, key string, version uint64) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if it, ok := b.vals[key]; !ok || it.Version != version {
		return false, nil
	}
	delete(b.vals, key)
	return true, nil
}

// Delete deletes key.
func (b *PerKeyBackend) Delete(_ context.Context, key string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.vals[key]
	delete(b.vals, key)
	return ok, nil
}

// FlagWrite writes a flag and appends to its audit log, as one step.
func (b *PerKeyBackend) FlagWrite(ctx context.Context, d *store.FlagWrite) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d.OK, d.Version, d.Current = false, 0, b.vals[d.Key].Version
	if d.Current != d.IfVersion {
		return nil
	}
	log, err := store.AppendLog(b.vals[d.AuditKey].Value, d.Audit, d.AuditKeep)
	if err != nil {
		return err
	}
	b.putLocked(d.AuditKey, log)
	d.OK, d.Version, d.Current = true, b.putLocked(d.Key, d.Value), 0
	return nil
}

// putLocked stores a copy of value under key at the key's next version.
func (b *PerKeyBackend) putLocked(key string, value []byte) uint64 {
	b.ver[key]++
	b.vals[key] = store.Item{Value: append([]byte(nil), value...), Version: b.ver[key]}
	return b.ver[key]
}
