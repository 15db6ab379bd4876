package evict

import "errors"

// ErrUnknownPolicy is returned by Parse for a name that names no policy.
var ErrUnknownPolicy = errors.New("tide: unknown eviction policy")
