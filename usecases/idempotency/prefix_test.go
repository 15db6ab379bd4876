package idempotency_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New validates Config.Prefix by the rule every adapter shares (see
// Config.Prefix): it accepted anything, so that a prefix with '{' took the
// Redis Cluster hash tag away from the record's hash, a control byte or a
// 64 KiB prefix reached every key (and every log line), and "tide:" or
// another adapter's default prefix put the records among another
// adapter's keys.
func TestNewValidatesPrefix(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for _, c := range []struct {
		name, prefix string
		ok           bool
	}{
		{"empty (the default)", "", true},
		{"default", "tide:idem:", true},
		{"own namespace", "tide:idem:payments:", true},
		{"application's", "shop:idem:", true},
		{"closing brace", "shop}:", true},
		{"longest", strings.Repeat("p", 128), true},
		{"opening brace", "shop{1}:", false},
		{"brace at the end", "shop:{", false},
		{"newline", "shop:\n", false},
		{"NUL", "shop\x00:", false},
		{"space", "shop idem:", false},
		{"not ASCII", "caf\xc3\xa9:", false},
		{"too long", strings.Repeat("p", 129), false},
		{"64 KiB", strings.Repeat("p", 64<<10), false},
		{"every adapter's namespace", "tide:", false},
		{"another adapter's namespace", "tide:sess:", false},
		{"inside the lease namespace", "tide:lease:idem:", false},
		{"Redis version counters", "tide:ver:", false},
	} {
		_, err := idempotency.New(idempotency.Config{Backend: b, Prefix: c.prefix})
		if c.ok && err != nil || !c.ok && !errors.Is(err, idempotency.ErrInvalidConfig) {
			t.Errorf("%s: New with Prefix %.40q (%d bytes) got %v, want accepted %v (else ErrInvalidConfig)", c.name, c.prefix, len(c.prefix), err, c.ok)
		}
	}
}
