package cache

import (
	"bytes"
	"context"
	"runtime/debug"
	"sync"
)

// Result is what a Group's function returns.
type Result struct {
	Value []byte
	Found bool
}

// Group runs at most one load per key at a time: callers that arrive while
// a load for their key is running wait for it and share its result, each
// with a copy of the value of its own. Its zero value is ready to use; it
// is safe for concurrent use.
//
// The load runs with the first caller's context values but without its
// cancellation (so one caller giving up does not fail the others). Every
// caller, the first included, is a waiter: one whose own context ends
// stops waiting with ctx.Err(), whether or not the load has returned, and
// once no caller waits any more the load's context is cancelled and the
// flight is forgotten, so that an origin call that hangs (but honours its
// context) ends, and a later caller starts a load of its own instead of
// joining one nobody wants. A caller whose context has already ended
// starts no load. A function that calls Do for its own key with the
// context it was given gets ErrReentrantLoad instead of waiting for
// itself. A load that panics is reported to every waiter as a
// *PanicError, and the panic is not propagated; one whose goroutine exits
// (runtime.Goexit) as ErrLoadExited.
type Group struct {
	mu    sync.Mutex
	calls map[string]*call
}

// runningKey marks the context a Group's function runs with: the run
// (a *call) of that key in that Group, so that fn asking for its own key
// fails instead of waiting for itself.
type runningKey struct {
	g   *Group
	key string
}

type call struct {
	done chan struct{}
	res  Result
	err  error
	// waiters counts the callers waiting for the result; guarded by the
	// Group's mu. When it drops to 0 before the load returns, cancel
	// cancels the load's context.
	waiters int
	cancel  context.CancelFunc
}

// Do runs fn for key unless a run is in flight, and returns its result
// (DoShared also says whether it was another caller's run).
func (g *Group) Do(ctx context.Context, key string, fn func(context.Context) (Result, error)) (Result, error) {
	r, _, err := g.DoShared(ctx, key, fn)
	return r, err
}

// DoShared is Do that also reports whether the result was shared.
func (g *Group) DoShared(ctx context.Context, key string, fn func(context.Context) (Result, error)) (r Result, shared bool, err error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*call{}
	}
	if c, ok := g.calls[key]; ok {
		if ctx.Value(runningKey{g, key}) == c {
			g.mu.Unlock()
			return Result{}, true, ErrReentrantLoad // fn would wait for itself
		}
		c.waiters++
		g.mu.Unlock()
		r, err := g.wait(ctx, key, c)
		return r, true, err
	}
	if err := ctx.Err(); err != nil {
		g.mu.Unlock()
		return Result{}, false, err // nobody would wait for the load
	}
	c := &call{done: make(chan struct{}), waiters: 1}
	lctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), runningKey{g, key}, c))
	c.cancel = cancel
	g.calls[key] = c
	g.mu.Unlock()

	if ctx.Done() == nil { // the caller never stops waiting: run fn on its goroutine
		g.run(lctx, key, c, fn)
		return c.result(), false, c.err
	}
	go g.run(lctx, key, c, fn)
	r, err = g.wait(ctx, key, c)
	return r, false, err
}

// wait waits for c's result or for ctx to end. The last waiter to leave
// before the result cancels the load and forgets the flight.
func (g *Group) wait(ctx context.Context, key string, c *call) (Result, error) {
	select {
	case <-c.done:
		return c.result(), c.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	c.waiters--
	if c.waiters == 0 {
		c.cancel()
		if g.calls[key] == c {
			delete(g.calls, key)
		}
	}
	g.mu.Unlock()
	return Result{}, ctx.Err()
}

// result is c's result for one caller: a copy of the value of its own, so
// that callers sharing a load never share (and race on) its bytes.
func (c *call) result() Result {
	return Result{Value: bytes.Clone(c.res.Value), Found: c.res.Found}
}

// run runs fn for c and ends c's flight however fn ends: it returns, it
// panics (a *PanicError), or its goroutine exits (runtime.Goexit, as
// t.FailNow does: ErrLoadExited). Left open, the flight would hold its
// waiters, and every later caller of key, forever.
func (g *Group) run(ctx context.Context, key string, c *call, fn func(context.Context) (Result, error)) {
	returned := false
	defer func() {
		if !returned {
			c.res, c.err = Result{}, ErrLoadExited
		}
		c.cancel()
		g.mu.Lock()
		if g.calls[key] == c { // not forgotten and replaced meanwhile
			delete(g.calls, key)
		}
		g.mu.Unlock()
		close(c.done)
	}()
	func() {
		defer func() {
			if p := recover(); p != nil {
				c.res, c.err = Result{}, &PanicError{Value: p, Stack: debug.Stack()}
			}
		}()
		c.res, c.err = fn(ctx)
	}()
	returned = true
}

// Forget makes the next Do for key start a new run instead of joining the
// one in flight (whose callers still get its result).
func (g *Group) Forget(key string) {
	g.mu.Lock()
	delete(g.calls, key)
	g.mu.Unlock()
}
