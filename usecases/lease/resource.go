package lease

import (
	"fmt"
	"sync"
	"sync/atomic"
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
// so check and write are one step. fn may call Highest (it reads the
// token fn runs under), but not Check or Do on the same Resource: they
// would wait for fn to return, forever.
type Resource struct {
	mu sync.Mutex
	// highest is written under mu and read without it (Highest), so that
	// a Do function can read it.
	highest atomic.Uint64
}

// NewResource returns a Resource that already saw highest (restored from
// durable storage after a restart).
func NewResource(highest uint64) *Resource {
	r := &Resource{}
	r.highest.Store(highest)
	return r
}

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
	if h := r.highest.Load(); token < h {
		return fmt.Errorf("%w: %d < %d", ErrStaleToken, token, h)
	}
	r.highest.Store(token)
	if fn != nil {
		return fn()
	}
	return nil
}

// Highest returns the highest token accepted so far. It does not take
// Do's mutex: called from a Do function, it returns that call's token.
func (r *Resource) Highest() uint64 { return r.highest.Load() }
