package featureflag

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"
)

// Watch calls fn with name's new record after every change: at once for
// writes through this Store, within PollInterval for writes elsewhere. fn
// runs on the writer's goroutine or the poller's; it must not block. The
// returned function stops the watch. fn may call the Store, Close
// included.
//
// A panic in fn on the writer's goroutine (a write or Refresh through this
// Store) reaches that caller, after the write it reports on is done; the
// watchers of the change it cut off are not skipped but called by the next
// Refresh or poll. A panic in fn on the poller goroutine is recovered:
// counted (WatcherPanics) and reported to Config.Logger and Config.OnError
// as ErrWatcherPanic with the flag's name; the poller goes on.
func (s *Store) Watch(name string, fn func(Flag)) (stop func(), err error) {
	w := &watcher{fn: fn}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if c, ok := s.cache[name]; ok && c.found {
		w.last = c.f.Revision
	}
	s.watchers[name] = append(s.watchers[name], w)
	if !s.polling {
		s.polling = true
		ctx, cancel := context.WithCancel(context.Background())
		s.pollCancel = cancel
		go s.poll(ctx)
	}
	return func() {
		s.mu.Lock()
		s.watchers[name] = slices.DeleteFunc(s.watchers[name], func(x *watcher) bool { return x == w })
		if len(s.watchers[name]) == 0 {
			delete(s.watchers, name)
		}
		s.mu.Unlock()
	}, nil
}

// notify calls the watchers of f.Name whose last revision is older. On
// the poller (poller true) it starts no watcher once Close has begun,
// marks each call so that Close does not wait for it, and recovers a
// watcher's panic. Off the poller a panic reaches the caller, and the
// watchers it cut off get their last revision back (rewind), so that the
// next refresh calls them.
func (s *Store) notify(f Flag, poller bool) {
	s.mu.Lock()
	var due []*watcher
	var prev []uint64
	for _, w := range s.watchers[f.Name] {
		if f.Revision > w.last {
			prev = append(prev, w.last)
			w.last = f.Revision
			due = append(due, w)
		}
	}
	s.mu.Unlock()
	for i, w := range due {
		if !poller {
			returned := false
			func() {
				defer func() {
					if !returned { // a panic (or Goexit) is on its way to the caller
						s.rewind(f.Revision, due[i+1:], prev[i+1:])
					}
				}()
				w.fn(f)
				returned = true
			}()
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.pollState = pollStateWatching
		s.pollCond.Broadcast()
		s.mu.Unlock()
		func() {
			defer s.setPollState(pollStateRunning)
			defer func() {
				if p := recover(); p != nil {
					s.watcherPanics.Add(1)
					s.rep.Report(context.Background(), slog.LevelError, "tide: flag watcher panicked", f.Name,
						fmt.Errorf("%w: %v", ErrWatcherPanic, p), slog.String("stack", string(debug.Stack())))
				}
			}()
			w.fn(f)
		}()
	}
}

// rewind gives the watchers ws, not called for revision rev, their last
// revision before it (prev), unless a later notify moved them on.
func (s *Store) rewind(rev uint64, ws []*watcher, prev []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range ws {
		if w.last == rev {
			w.last = prev[i]
		}
	}
}

func (s *Store) setPollState(st pollState) {
	s.mu.Lock()
	s.pollState = st
	s.pollCond.Broadcast()
	s.mu.Unlock()
}

// poll runs until Close, which cancels ctx: a store read in flight then
// ends at once, even on a store with no timeout of its own.
func (s *Store) poll(ctx context.Context) {
	defer s.setPollState(pollStateExited)
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.refresh(ctx, true) // failures are reported by Get
	}
}

// Refresh re-reads every watched flag now and notifies watchers of
// changes (the poller calls it every PollInterval). It returns the first
// store error.
func (s *Store) Refresh(ctx context.Context) error { return s.refresh(ctx, false) }

func (s *Store) refresh(ctx context.Context, poller bool) error {
	s.mu.Lock()
	names := make([]string, 0, len(s.watchers))
	for n := range s.watchers {
		names = append(names, n)
	}
	s.mu.Unlock()
	var first error
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, ok, err := s.Get(ctx, n)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		if ok {
			s.notify(f, poller)
		}
	}
	return first
}

// Close stops the poller. Cached reads and writes keep working; Watch
// returns ErrClosed. Close is idempotent and may be called from any
// goroutine, a watcher included. It cancels the poller's store read in
// flight, if any (the poller reads with a context that Close ends, so a
// store that stopped answering does not hold Close up), and waits for the
// poller to end, except while the poller runs a watcher (which may be the
// caller): that watcher may still run when Close returns, the poller
// starts no other after Close has begun, and it ends when the watcher
// returns.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	if s.pollCancel != nil {
		s.pollCancel()
	}
	for s.polling && s.pollState == pollStateRunning {
		s.pollCond.Wait()
	}
	return nil
}

// WatcherPanics returns the number of watcher panics the poller goroutine
// recovered (each also reported as ErrWatcherPanic). A watcher run on the
// caller's goroutine panics into the caller and is not counted.
func (s *Store) WatcherPanics() uint64 { return s.watcherPanics.Load() }
