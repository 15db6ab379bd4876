package ratelimit_test

import (
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
	storetest.AdapterPrefix(t, "tide:rl:", "tide:sess:", ratelimit.ErrInvalidConfig, func(p string) error {
		_, err := ratelimit.New(ratelimit.Config{Backend: b, Name: "api", Limit: 1, Period: time.Second, Prefix: p})
		return err
	})
}
