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
var engineErrors = [...]struct{ engine, store error }{
	{engine.ErrKeyTooLarge, kverr.ErrKeyTooLarge},
	{engine.ErrTooLarge, kverr.ErrTooLarge},
	{engine.ErrInvalidTTL, kverr.ErrInvalidTTL},
	{engine.ErrInvalidOptions, kverr.ErrInvalidOptions},
	{engine.ErrOutOfMemory, kverr.ErrOutOfMemory},
	{engine.ErrOverflow, kverr.ErrOverflow},
	{engine.ErrClosed, kverr.ErrClosed},
	// A durability log that failed a write: the store could not take it.
	{engine.ErrLogWrite, store.ErrUnavailable},
	{engine.ErrLogFailed, store.ErrUnavailable},
}

// storeError is an engine error that also matches the store's sentinel
// for the same condition: errors.Is holds for either.
type storeError struct{ err, sentinel error }

func (e *storeError) Error() string   { return e.err.Error() }
func (e *storeError) Unwrap() []error { return []error{e.err, e.sentinel} }

// fromEngine makes an engine error match the store's sentinels too.
func fromEngine(err error) error {
	if err == nil {
		return nil
	}
	for _, p := range engineErrors {
		if p.engine != p.store && errors.Is(err, p.engine) && !errors.Is(err, p.store) {
			return &storeError{err: err, sentinel: p.store}
		}
	}
	return err
}
