package embedded

import (
	"context"
	"fmt"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
)

// The decisions, one method per kind (store.Decisions). Each validates its
// parameters, runs on a copy of the decision whose keys are in the
// Backend's scope (checking their length), with the kind's optimistic loop
// (ratelimit.go, idem.go, lease.go, flag.go), copies the results back with
// the caller's keys, and reports engine errors as the store's sentinels.

// TokenBucket implements store.Decisions.
func (b *Backend) TokenBucket(ctx context.Context, d *store.TokenBucket) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key); err != nil {
		return err
	}
	s := *d
	s.Key = b.key(d.Key)
	err := b.tokenBucket(ctx, &s)
	s.Key = d.Key
	*d = s
	return fromEngine(err)
}

// FixedWindow implements store.Decisions.
func (b *Backend) FixedWindow(ctx context.Context, d *store.FixedWindow) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key); err != nil {
		return err
	}
	s := *d
	s.Key = b.key(d.Key)
	err := b.fixedWindow(ctx, &s)
	s.Key = d.Key
	*d = s
	return fromEngine(err)
}

// SlidingWindow implements store.Decisions.
func (b *Backend) SlidingWindow(ctx context.Context, d *store.SlidingWindow) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key); err != nil {
		return err
	}
	s := *d
	s.Key = b.key(d.Key)
	err := b.slidingWindow(ctx, &s)
	s.Key = d.Key
	*d = s
	return fromEngine(err)
}

// Idempotency implements store.Decisions.
func (b *Backend) Idempotency(ctx context.Context, d *store.Idempotency) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key); err != nil {
		return err
	}
	s := *d
	s.Key = b.key(d.Key)
	err := b.idempotency(ctx, &s)
	s.Key = d.Key
	*d = s
	return fromEngine(err)
}

// Lease implements store.Decisions.
func (b *Backend) Lease(ctx context.Context, d *store.Lease) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key, d.FenceKey); err != nil {
		return err
	}
	s := *d
	s.Key, s.FenceKey = b.key(d.Key), b.key(d.FenceKey)
	err := b.lease(ctx, &s)
	s.Key, s.FenceKey = d.Key, d.FenceKey
	*d = s
	return fromEngine(err)
}

// FlagWrite implements store.Decisions.
func (b *Backend) FlagWrite(ctx context.Context, d *store.FlagWrite) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key, d.AuditKey); err != nil {
		return err
	}
	s := *d
	s.Key, s.AuditKey = b.key(d.Key), b.key(d.AuditKey)
	err := b.flagWrite(ctx, &s)
	s.Key, s.AuditKey = d.Key, d.AuditKey
	*d = s
	return fromEngine(err)
}

// checkKeys refuses a decision whose keys (the caller's, before the
// prefix) the engine would not accept (store.ErrKeyTooLarge, as Redis's
// backend refuses them), or that are reserved (store.Reserved:
// store.ErrInvalidArgument, as on every backend), before it reads
// anything: the engine reads an over-long key as missing, so a decision
// that writes nothing (an inspect, a peek, a refused condition) would
// otherwise answer "absent", "free" or "allowed" for it.
func (b *Backend) checkKeys(keys ...string) error {
	for _, k := range keys {
		if len(b.prefix)+len(k) > b.e.MaxKeySize() {
			return fromEngine(fmt.Errorf("%w: %d bytes, limit %d", engine.ErrKeyTooLarge, len(b.prefix)+len(k), b.e.MaxKeySize()))
		}
		if store.Reserved(k) {
			return reservedError(k)
		}
	}
	return nil
}
