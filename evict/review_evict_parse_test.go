package evict

import (
	"errors"
	"strings"
	"testing"
)

// TestReviewEvictParseHostileNames: names that differ from a policy's by
// more than case and surrounding space name no policy, and the error
// wraps ErrUnknownPolicy, starts with "tide: " and quotes the name as
// given; case and surrounding space of any kind are ignored.
func TestReviewEvictParseHostileNames(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = ErrUnknownPolicy
	}{
		{"\t ALLKEYS-LRU \n", "allkeys-lru"},
		{"\u00a0volatile-TTL\u2003", "volatile-ttl"},
		{"   ", "noeviction"},
		{"NoEviction", "noeviction"},
		{"allkeys lru", ""},
		{"allkeys_lru", ""},
		{"allkeys-lru\x00", ""},
		{"allkeys--lru", ""},
		{"-", ""},
		{"volatile-", ""},
		{"volatile-s3fifo", ""},
		{"volatile-adaptive", ""},
		{"allkeys-noeviction", ""},
		{"allkeys-lru,allkeys-lfu", ""},
		{strings.Repeat("a", 1<<16), ""},
		{"\xff\xfe", ""},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.want == "" {
			if !errors.Is(err, ErrUnknownPolicy) || !strings.HasPrefix(err.Error(), "tide: ") || got.New != nil || got.Name != "" {
				t.Errorf("Parse(%.40q) = %q, %v; want the zero Spec and an error wrapping ErrUnknownPolicy, prefixed \"tide: \"", tt.in, got.Name, err)
			}
			continue
		}
		if err != nil || got.Name != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want %q, nil", tt.in, got.Name, err, tt.want)
		}
	}
}
