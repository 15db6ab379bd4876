package ratelimit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New validates Config.Prefix by the rule every adapter shares (see
// Config.Prefix): it refused only '{', so that a control byte reached
// every key, a 64 KiB prefix failed every decision (every request denied,
// see TestRequestTheStoreRefusesIsNeverAdmitted), and "tide:" or another
// adapter's default prefix put the limiter's state among another
// adapter's keys, where another adapter's caller-chosen key can name it.
func TestNewValidatesPrefix(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for _, c := range []struct {
		name, prefix string
		ok           bool
	}{
		{"empty (the default)", "", true},
		{"default", "tide:rl:", true},
		{"own namespace", "tide:rl:eu:", true},
		{"application's", "shop:rl:", true},
		{"closing brace", "shop}:", true},
		{"longest", strings.Repeat("p", 128), true},
		{"opening brace", "shop{1}:", false},
		{"brace at the end", "shop:{", false},
		{"newline", "shop:\n", false},
		{"NUL", "shop\x00:", false},
		{"space", "shop rl:", false},
		{"not ASCII", "caf\xc3\xa9:", false},
		{"too long", strings.Repeat("p", 129), false},
		{"64 KiB", strings.Repeat("p", 64<<10), false},
		{"every adapter's namespace", "tide:", false},
		{"another adapter's namespace", "tide:sess:", false},
		{"inside the cache namespace", "tide:cache:rl:", false},
		{"Redis version counters", "tide:ver:", false},
	} {
		_, err := ratelimit.New(ratelimit.Config{Backend: b, Name: "api", Limit: 1, Period: time.Second, Prefix: c.prefix})
		if c.ok && err != nil || !c.ok && !errors.Is(err, ratelimit.ErrInvalidConfig) {
			t.Errorf("%s: New with Prefix %.40q (%d bytes) got %v, want accepted %v (else ErrInvalidConfig)", c.name, c.prefix, len(c.prefix), err, c.ok)
		}
	}
}
