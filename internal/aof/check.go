package aof

import "fmt"

// Check verifies the log's invariants and returns the first violation:
//
//   - the active incremental log ends exactly where the last complete
//     record does (a failed write was cut off);
//   - every file the in-memory manifest names exists, and it names at
//     least one incremental log.
//
// It waits for a running flush and rewrite. A failed or closed log is not
// checked. Tests call it after every operation.
func (l *Log) Check() error {
	l.rewriteMu.Lock()
	defer l.rewriteMu.Unlock()
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.mu.Lock()
	err := l.unusableLocked()
	l.mu.Unlock()
	if err != nil {
		return nil
	}
	size, err := l.f.Size()
	if err != nil {
		return fmt.Errorf("check: active log: %w", err)
	}
	if want := l.size.Load(); size != want {
		return fmt.Errorf("check: active log is %d bytes, its last record ends at %d", size, want)
	}
	names, err := l.fsys.List()
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, n := range l.man.names() {
		if !have[n] {
			return fmt.Errorf("check: manifest names %s, which does not exist", n)
		}
	}
	if len(l.man.incrs) == 0 {
		return fmt.Errorf("check: manifest names no incremental log")
	}
	return nil
}
