package featureflag_test

import (
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
	storetest.AdapterPrefix(t, "tide:flag:", "tide:rl:", featureflag.ErrInvalidConfig, func(p string) error {
		s, err := featureflag.New(featureflag.Config{Backend: b, Prefix: p})
		if s != nil {
			s.Close()
		}
		return err
	})
}
