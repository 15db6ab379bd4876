package featureflag

import (
	"context"
	"slices"
	"time"
)

// Watch calls fn with name's new record after every change: at once for
// writes through this Store, within PollInterval for writes elsewhere. fn
// runs on the writer's goroutine or the poller's; it must not block. The
// returned function stops the watch.
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
		s.wg.Add(1)
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

// notify calls the watchers of f.Name whose last revision is older.
func (s *Store) notify(f Flag) {
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
		w.fn(f)
	}
}

func (s *Store) poll() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.Refresh(context.Background()) // failures are reported by Get
	}
}

// Refresh re-reads every watched flag now and notifies watchers of
// changes (the poller calls it every PollInterval). It returns the first
// store error.
func (s *Store) Refresh(ctx context.Context) error {
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
			s.notify(f)
		}
	}
	return first
}

// Close stops the poller. Cached reads and writes keep working; Watch
// returns ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
