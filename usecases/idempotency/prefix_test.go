package idempotency_test

import (
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
	storetest.AdapterPrefix(t, "tide:idem:", "tide:sess:", idempotency.ErrInvalidConfig, func(p string) error {
		_, err := idempotency.New(idempotency.Config{Backend: b, Prefix: p})
		return err
	})
}
