package session_test

import (
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
	storetest.AdapterPrefix(t, "tide:sess:", "tide:idem:", session.ErrInvalidConfig, func(p string) error {
		_, err := session.New(session.Config{Backend: b, Prefix: p})
		return err
	})
}
