package cache_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New validates Config.Prefix by the rule every adapter shares (see
// Config.Prefix): it accepted anything. A '{' took the Redis Cluster hash
// tag to where it pleased; a control byte or a 64 KiB prefix reached every
// key (the latter failing every store call, so that every Get went to the
// origin); and a prefix over another adapter's key space let a caller's
// key name another adapter's key: with Prefix "tide:" and Name "rl", the
// cache key "tb:{k:10.0.0.1}" is "tide:rl:k:tb:{k:10.0.0.1}", the state of
// a default-prefixed rate limiter named "k" for 10.0.0.1, which a fill
// would overwrite.
func TestNewValidatesPrefix(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for _, c := range []struct {
		name, prefix string
		ok           bool
	}{
		{"empty (the default)", "", true},
		{"default", "tide:cache:", true},
		{"own namespace", "tide:cache:eu:", true},
		{"application's", "shop:cache:", true},
		{"closing brace", "shop}:", true},
		{"longest", strings.Repeat("p", 128), true},
		{"opening brace", "shop{1}:", false},
		{"brace at the end", "shop:{", false},
		{"newline", "shop:\n", false},
		{"NUL", "shop\x00:", false},
		{"space", "shop cache:", false},
		{"not ASCII", "caf\xc3\xa9:", false},
		{"too long", strings.Repeat("p", 129), false},
		{"64 KiB", strings.Repeat("p", 64<<10), false},
		{"every adapter's namespace", "tide:", false},
		{"another adapter's namespace", "tide:sess:", false},
		{"inside the lease namespace", "tide:lease:cache:", false},
		{"Redis version counters", "tide:ver:", false},
	} {
		_, err := cache.New(cache.Config{Backend: b, Name: "products", Prefix: c.prefix})
		if c.ok && err != nil || !c.ok && !errors.Is(err, cache.ErrInvalidConfig) {
			t.Errorf("%s: New with Prefix %.40q (%d bytes) got %v, want accepted %v (else ErrInvalidConfig)", c.name, c.prefix, len(c.prefix), err, c.ok)
		}
	}
}
