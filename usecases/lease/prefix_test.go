package lease_test

import (
	"testing"

	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New validates Config.Prefix by the rule every adapter shares (see
// Config.Prefix): it refused only '{', so that a control byte or a 64 KiB
// prefix reached every key (the latter failing every Acquire), and
// "tide:" or another adapter's default prefix put the leases and fence
// counters among another adapter's keys.
func TestNewValidatesPrefix(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	storetest.AdapterPrefix(t, "tide:lease:", "tide:sess:", lease.ErrInvalidConfig, func(p string) error {
		_, err := lease.New(lease.Config{Backend: b, Prefix: p})
		return err
	})
}
