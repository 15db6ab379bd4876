package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New validates Config.Prefix by the rule every adapter shares (see
// Config.Prefix): it checked nothing, so that a control byte or a 64 KiB
// prefix reached every key (the latter failing every store call: nobody
// could sign in), and "tide:" or another adapter's default prefix put the
// sessions and user indexes among another adapter's keys.
func TestNewValidatesPrefix(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for _, c := range []struct {
		name, prefix string
		ok           bool
	}{
		{"empty (the default)", "", true},
		{"default", "tide:sess:", true},
		{"own namespace", "tide:sess:eu:", true},
		{"application's", "shop:sess:", true},
		{"closing brace", "shop}:", true},
		{"longest", strings.Repeat("p", 128), true},
		{"opening brace", "shop{1}:", false},
		{"brace at the end", "shop:{", false},
		{"newline", "shop:\n", false},
		{"NUL", "shop\x00:", false},
		{"space", "shop sess:", false},
		{"not ASCII", "caf\xc3\xa9:", false},
		{"too long", strings.Repeat("p", 129), false},
		{"64 KiB", strings.Repeat("p", 64<<10), false},
		{"every adapter's namespace", "tide:", false},
		{"another adapter's namespace", "tide:idem:", false},
		{"inside the cache namespace", "tide:cache:sess:", false},
		{"Redis version counters", "tide:ver:", false},
	} {
		_, err := session.New(session.Config{Backend: b, Prefix: c.prefix})
		if c.ok && err != nil || !c.ok && !errors.Is(err, session.ErrInvalidConfig) {
			t.Errorf("%s: New with Prefix %.40q (%d bytes) got %v, want accepted %v (else ErrInvalidConfig)", c.name, c.prefix, len(c.prefix), err, c.ok)
		}
	}
}
