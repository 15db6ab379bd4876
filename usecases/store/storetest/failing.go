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

// Incr implements store.Backend.
func (f *Flaky) Incr(ctx context.Context, key string, delta int64, o store.IncrOptions) (int64, error) {
	if err := f.fail(); err != nil {
		return 0, err
	}
	return f.Backend.Incr(ctx, key, delta, o)
}

// Decide implements store.Backend.
func (f *Flaky) Decide(ctx context.Context, d store.Decision) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.Backend.Decide(ctx, d)
}
