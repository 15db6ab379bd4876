package aof

// Test hooks for the external tests (package aof_test).

// FileSwitchPending reports whether a goroutine holds or waits for the
// exclusive file lock (Close, a rewrite's switch): readers that arrive now
// queue behind it.
func FileSwitchPending(l *Log) bool {
	if l.fileMu.TryRLock() {
		l.fileMu.RUnlock()
		return false
	}
	return true
}

// Closing reports whether Close has refused further appends.
func Closing(l *Log) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}
