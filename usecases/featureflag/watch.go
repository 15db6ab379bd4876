package featureflag

import (
	"context"
	"slices"
	"time"
)

// Watch calls fn with name's new record after every change: at once for
// writes through this Store, within PollInterval for writes elsewhere. fn
// runs on the writer's goroutine or the poller's; it must not block. The
// returned function stops the watch. fn may call the Store, Close
// included.
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
		go s.poll()
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
// the poller (poller true) it starts no watcher once Close has begun, and
// marks each call so that Close does not wait for it.
func (s *Store) notify(f Flag, poller bool) {
	s.mu.Lock()
	var due []*watcher
	for _, w := range s.watchers[f.Name] {
		if f.Revision > w.last {
			w.last = f.Revision
			due = append(due, w)
		}
	}
	s.mu.Unlock()
	for _, w := range due {
		if !poller {
			w.fn(f)
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
			w.fn(f)
		}()
	}
}

func (s *Store) setPollState(st pollState) {
	s.mu.Lock()
	s.pollState = st
	s.pollCond.Broadcast()
	s.mu.Unlock()
}

func (s *Store) poll() {
	defer s.setPollState(pollStateExited)
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.refresh(context.Background(), true) // failures are reported by Get
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
// goroutine, a watcher included. It waits for the poller to end, except
// while the poller runs a watcher (which may be the caller): that watcher
// may still run when Close returns, the poller starts no other after Close
// has begun, and it ends when the watcher returns.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	for s.polling && s.pollState == pollStateRunning {
		s.pollCond.Wait()
	}
	return nil
}
