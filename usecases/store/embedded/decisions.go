package embedded

import (
	"context"
	"fmt"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
)

// The decisions, one method per kind (store.Decisions). Each validates its
// parameters and the length of its keys, runs the kind's optimistic loop (ratelimit.go, idem.go,
// lease.go, flag.go) and reports engine errors as the store's sentinels.

// TokenBucket implements store.Decisions.
func (b *Backend) TokenBucket(ctx context.Context, d *store.TokenBucket) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key); err != nil {
		return err
	}
	return fromEngine(b.tokenBucket(ctx, d))
}

// FixedWindow implements store.Decisions.
func (b *Backend) FixedWindow(ctx context.Context, d *store.FixedWindow) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key); err != nil {
		return err
	}
	return fromEngine(b.fixedWindow(ctx, d))
}

// SlidingWindow implements store.Decisions.
func (b *Backend) SlidingWindow(ctx context.Context, d *store.SlidingWindow) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key); err != nil {
		return err
	}
	return fromEngine(b.slidingWindow(ctx, d))
}

// Idempotency implements store.Decisions.
func (b *Backend) Idempotency(ctx context.Context, d *store.Idempotency) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key); err != nil {
		return err
	}
	return fromEngine(b.idempotency(ctx, d))
}

// Lease implements store.Decisions.
func (b *Backend) Lease(ctx context.Context, d *store.Lease) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key, d.FenceKey); err != nil {
		return err
	}
	return fromEngine(b.lease(ctx, d))
}

// FlagWrite implements store.Decisions.
func (b *Backend) FlagWrite(ctx context.Context, d *store.FlagWrite) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKeys(d.Key, d.AuditKey); err != nil {
		return err
	}
	return fromEngine(b.flagWrite(ctx, d))
}

// checkKeys refuses a decision whose keys the engine would not accept
// (store.ErrKeyTooLarge, as Redis's backend refuses them) before it reads
// anything: the engine reads an over-long key as missing, so a decision
// that writes nothing (an inspect, a peek, a refused condition) would
// otherwise answer "absent", "free" or "allowed" for it.
func (b *Backend) checkKeys(keys ...string) error {
	for _, k := range keys {
		if len(k) > b.e.MaxKeySize() {
			return fromEngine(fmt.Errorf("%w: %d bytes, limit %d", engine.ErrKeyTooLarge, len(k), b.e.MaxKeySize()))
		}
	}
	return nil
}
