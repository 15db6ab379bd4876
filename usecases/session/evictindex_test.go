package session_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// A session in use is read on every request; its user's index is read
// only at sign-in, List and DestroyAll. On an engine that evicts (MaxBytes
// with a policy), without Config.Pin, the cold index went first while the
// hot record stayed: DestroyAll ("sign out everywhere", after a password
// change) then found no index, revoked nothing, and the stolen session
// lived on; the user's next sign-ins started a fresh index, outside
// MaxUserSessions. The index is now pinned whatever Config.Pin says (it
// has a TTL, its sessions' last deadline, and at most MaxUserSessions
// entries).
func TestEvictionSparesTheUserIndex(t *testing.T) {
	for _, p := range []evict.Spec{evict.AllKeysLRU, evict.AllKeysLFU, evict.S3FIFO} {
		ctx := context.Background()
		clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		e, err := engine.New(engine.Config{Clock: clk, ExpiryInterval: -1, Shards: 1, MaxBytes: 64 << 10, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		b, err := embedded.New(embedded.Config{Engine: e, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		m, err := session.New(session.Config{Backend: b})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.Create(ctx, "victim", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		// The session in use while other traffic fills the engine many
		// times over.
		for i := range 5000 {
			if _, ok, err := m.Load(ctx, s.ID); !ok || err != nil {
				t.Fatalf("%s: Load %d: got (%v, %v), want the session (it is in use)", p.Name, i, ok, err)
			}
			if _, _, err := b.Set(ctx, fmt.Sprintf("other:%d", i), make([]byte, 100), store.SetOptions{TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := m.DestroyAll(ctx, "victim"); n != 1 || err != nil {
			t.Errorf("%s: DestroyAll: got (%d, %v), want (1, nil)", p.Name, n, err)
		}
		if _, ok, err := m.Load(ctx, s.ID); ok || err != nil {
			t.Errorf("%s: the session after DestroyAll: Load got (%v, %v), want revoked", p.Name, ok, err)
		}
	}
}
