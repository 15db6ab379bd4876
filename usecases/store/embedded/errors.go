package embedded

import (
	"errors"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/kverr"
	"github.com/tidekv/tide/usecases/store"
)

// engineErrors pairs each engine sentinel with the store's (package
// kverr's, or store.ErrUnavailable for a failed log write) for the same
// condition.
var engineErrors = [...]struct {
	engine error
	store  []error
}{
	{engine.ErrKeyTooLarge, []error{kverr.ErrKeyTooLarge}},
	{engine.ErrTooLarge, []error{kverr.ErrTooLarge}},
	// A TTL the engine refuses is one the caller gave (or computed from
	// the caller's parameters, a window or an interval) and whose deadline
	// overflows the clock: an invalid argument (store.ErrInvalidTTL's doc:
	// "Set's errors for such a TTL also match ErrInvalidArgument").
	{engine.ErrInvalidTTL, []error{kverr.ErrInvalidTTL, store.ErrInvalidArgument}},
	{engine.ErrInvalidOptions, []error{kverr.ErrInvalidOptions}},
	{engine.ErrOutOfMemory, []error{kverr.ErrOutOfMemory}},
	{engine.ErrOverflow, []error{kverr.ErrOverflow}},
	{engine.ErrClosed, []error{kverr.ErrClosed}},
	// A durability log that failed a write: the store could not take it.
	{engine.ErrLogWrite, []error{store.ErrUnavailable}},
	{engine.ErrLogFailed, []error{store.ErrUnavailable}},
}

// storeError is an engine error that also matches the store's sentinels
// for the same condition: errors.Is holds for any of them.
type storeError struct {
	err       error
	sentinels []error
}

func (e *storeError) Error() string   { return e.err.Error() }
func (e *storeError) Unwrap() []error { return append([]error{e.err}, e.sentinels...) }

// fromEngine makes an engine error match the store's sentinels too.
func fromEngine(err error) error {
	if err == nil {
		return nil
	}
	for _, p := range engineErrors {
		if !errors.Is(err, p.engine) {
			continue
		}
		var missing []error
		for _, s := range p.store {
			if !errors.Is(err, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			return &storeError{err: err, sentinels: missing}
		}
		return err
	}
	return err
}
