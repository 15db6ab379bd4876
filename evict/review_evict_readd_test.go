package evict

import "testing"

// TestReviewEvictAddOfATrackedHandleIsAnUpdate guards the same handle
// added twice (TestEmptyAndBadInput calls the second Add "an update"):
// every policy treats it as Update, a write that counts as an access, and
// keeps what it learnt about the entry. AllKeysLFU reset the entry's
// counter to a new entry's, so a hot entry written through Add again was
// evicted before a colder one.
func TestReviewEvictAddOfATrackedHandleIsAnUpdate(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
	}{
		{"allkeys-lfu", newLFU(LFUConfig{LogFactor: -1})}, // every hit counts
		{"allkeys-lru", newLRU()},
	}
	for _, tt := range tests {
		p := tt.p
		p.Add(0, Entry{Hash: 1, Size: 1})
		p.Add(1, Entry{Hash: 2, Size: 1})
		for range 100 {
			p.Access(0)
		}
		for range 10 {
			p.Access(1)
		}
		p.Add(0, Entry{Hash: 1, Size: 1}) // tracked: an update
		if got, _ := p.Victim(0); got != 1 {
			t.Errorf("%s: Victim after a second Add of the hot entry 0 = %d, want 1", tt.name, got)
		}
		if err := Check(p); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}
