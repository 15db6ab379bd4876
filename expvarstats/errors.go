package expvarstats

import "errors"

var (
	// ErrNameTaken reports a name already published in expvar by something
	// other than a detached Var of this package.
	ErrNameTaken = errors.New("tide: expvar name already published")
	// ErrInvalidName reports an empty name.
	ErrInvalidName = errors.New("tide: invalid expvar name")
)
