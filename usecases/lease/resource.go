package lease

import (
	"fmt"
	"sync"
)

// Resource is the downstream check that makes leases safe: it accepts a
// write carrying a fencing token only if the token is ≥ the highest token
// it has accepted, and remembers the highest. A holder whose lease was
// superseded (it paused past expiry while another acquired) carries an
// older token and is rejected.
//
// In production the check lives where the data lives (a conditional UPDATE
// … WHERE fence <= $token, an object store precondition); Resource is the
// in-process form and the reference for tests. Its zero value accepts any
// token. It is safe for concurrent use; Do holds its mutex while fn runs,
// so check and write are one step.
type Resource struct {
	mu      sync.Mutex
	highest uint64
}

// NewResource returns a Resource that already saw highest (restored from
// durable storage after a restart).
func NewResource(highest uint64) *Resource { return &Resource{highest: highest} }

// Check accepts token (raising the highest) or returns ErrStaleToken.
func (r *Resource) Check(token uint64) error {
	return r.Do(token, nil)
}

// Do runs fn if token is accepted, atomically with the check. If fn
// returns an error the token still counts as seen (the writer was
// current). A stale token returns an error wrapping ErrStaleToken and fn
// does not run.
func (r *Resource) Do(token uint64, fn func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.highest {
		return fmt.Errorf("%w: %d < %d", ErrStaleToken, token, r.highest)
	}
	r.highest = token
	if fn != nil {
		return fn()
	}
	return nil
}

// Highest returns the highest token accepted so far.
func (r *Resource) Highest() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.highest
}
