package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// Flaky wraps a backend and makes every call fail with an error wrapping
// store.ErrUnavailable while Down is set, as a remote store does when the
// network fails. Adapters' failure-policy tests use it.
type Flaky struct {
	store.Backend
	// Down, while true, makes every call fail.
	Down atomic.Bool
}

var _ store.Backend = (*Flaky)(nil)

func (f *Flaky) fail() error {
	if f.Down.Load() {
		return fmt.Errorf("%w: injected failure", store.ErrUnavailable)
	}
	return nil
}

// Now implements store.Backend.
func (f *Flaky) Now(ctx context.Context) (time.Time, error) {
	if err := f.fail(); err != nil {
		return time.Time{}, err
	}
	return f.Backend.Now(ctx)
}

// Get implements store.Backend.
func (f *Flaky) Get(ctx context.Context, key string) (store.Item, bool, error) {
	if err := f.fail(); err != nil {
		return store.Item{}, false, err
	}
	return f.Backend.Get(ctx, key)
}

// Set implements store.Backend.
func (f *Flaky) Set(ctx context.Context, key string, value []byte, o store.SetOptions) (uint64, bool, error) {
	if err := f.fail(); err != nil {
		return 0, false, err
	}
	return f.Backend.Set(ctx, key, value, o)
}

// CompareAndDelete implements store.Backend.
func (f *Flaky) CompareAndDelete(ctx context.Context, key string, version uint64) (bool, error) {
	if err := f.fail(); err != nil {
		return false, err
	}
	return f.Backend.CompareAndDelete(ctx, key, version)
}

// Delete implements store.Backend.
func (f *Flaky) Delete(ctx context.Context, key string) (bool, error) {
	if err := f.fail(); err != nil {
		return false, err
	}
	return f.Backend.Delete(ctx, key)
}

// TokenBucket implements store.Decisions.
func (f *Flaky) TokenBucket(ctx context.Context, d *store.TokenBucket) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.TokenBucket(ctx, d)
}

// FixedWindow implements store.Decisions.
func (f *Flaky) FixedWindow(ctx context.Context, d *store.FixedWindow) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.FixedWindow(ctx, d)
}

// SlidingWindow implements store.Decisions.
func (f *Flaky) SlidingWindow(ctx context.Context, d *store.SlidingWindow) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.SlidingWindow(ctx, d)
}

// Idempotency implements store.Decisions.
func (f *Flaky) Idempotency(ctx context.Context, d *store.Idempotency) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.Idempotency(ctx, d)
}

// Lease implements store.Decisions.
func (f *Flaky) Lease(ctx context.Context, d *store.Lease) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.Lease(ctx, d)
}

// FlagWrite implements store.Decisions.
func (f *Flaky) FlagWrite(ctx context.Context, d *store.FlagWrite) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.FlagWrite(ctx, d)
}
