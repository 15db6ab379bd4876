package featureflag_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New validates Config.Prefix by the rule every adapter shares (see
// Config.Prefix): it accepted anything, so a '{' moved every flag's Redis
// Cluster hash tag off its name, a control byte reached every key, and a
// prefix over another adapter's key space ("tide:") let a flag's key
// share a key space with the others'.
func TestNewValidatesPrefix(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for _, c := range []struct {
		name, prefix string
		ok           bool
	}{
		{"empty (the default)", "", true},
		{"default", "tide:flag:", true},
		{"own namespace", "tide:flag:eu:", true},
		{"application's", "shop:flags:", true},
		{"longest", strings.Repeat("p", 128), true},
		{"opening brace", "shop{1}:", false},
		{"newline", "shop:\n", false},
		{"NUL", "shop\x00:", false},
		{"space", "shop flags:", false},
		{"too long", strings.Repeat("p", 129), false},
		{"every adapter's namespace", "tide:", false},
		{"another adapter's namespace", "tide:rl:", false},
		{"Redis version counters", "tide:ver:", false},
	} {
		s, err := featureflag.New(featureflag.Config{Backend: b, Prefix: c.prefix})
		if s != nil {
			s.Close()
		}
		if c.ok && err != nil || !c.ok && !errors.Is(err, featureflag.ErrInvalidConfig) {
			t.Errorf("%s: New with Prefix %.40q (%d bytes) got %v, want accepted %v (else ErrInvalidConfig)", c.name, c.prefix, len(c.prefix), err, c.ok)
		}
	}
}
