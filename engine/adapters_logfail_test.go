package engine_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/internal/aof/faultfs"
	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// TestAdaptersSeeAFailedLogWriteAsUnavailable guards the embedded
// backend's error mapping on a durable engine: when the log cannot take a
// write (ENOSPC, a short write: ErrLogWrite; a failed fsync: ErrLogFailed)
// every adapter's writing call fails with store.ErrUnavailable, not with a
// success, a wrong answer or an engine error the adapter does not know.
func TestAdaptersSeeAFailedLogWriteAsUnavailable(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		do   func(b *embedded.Backend) error
	}{
		{"idempotency.Do", func(b *embedded.Backend) error {
			s, err := idempotency.New(idempotency.Config{Backend: b})
			if err != nil {
				return err
			}
			k := idempotency.Key{Scope: "acct", Operation: "charge", Key: "order-1"}
			ran := false
			_, _, err = s.Do(ctx, k, idempotency.Fingerprint([]byte("x")), func(context.Context) ([]byte, error) {
				ran = true
				return []byte("receipt"), nil
			})
			if ran {
				t.Error("idempotency.Do ran the operation although its record could not be written")
			}
			return err
		}},
		{"lease.Acquire", func(b *embedded.Backend) error {
			m, err := lease.New(lease.Config{Backend: b})
			if err != nil {
				return err
			}
			_, _, _, err = m.Acquire(ctx, "job", "worker")
			return err
		}},
		{"ratelimit.Allow", func(b *embedded.Backend) error {
			l, err := ratelimit.New(ratelimit.Config{Name: "api", Backend: b, Limit: 10, Period: time.Second})
			if err != nil {
				return err
			}
			_, err = l.Allow(ctx, "client")
			return err
		}},
		{"session.Create", func(b *embedded.Backend) error {
			m, err := session.New(session.Config{Backend: b})
			if err != nil {
				return err
			}
			_, err = m.Create(ctx, "user", "", nil)
			return err
		}},
		{"featureflag.Create", func(b *embedded.Backend) error {
			s, err := featureflag.New(featureflag.Config{Backend: b})
			if err != nil {
				return err
			}
			defer s.Close()
			_, err = s.Create(ctx, "flag", featureflag.State{Enabled: true}, "ops", "test")
			return err
		}},
	}
	faults := []struct {
		name  string
		op    faultfs.Op
		fault *faultfs.Fault
	}{
		{"ENOSPC", faultfs.OpWrite, &faultfs.Fault{Err: syscall.ENOSPC, Partial: 3}},
		{"short write", faultfs.OpWrite, &faultfs.Fault{Partial: 5}},
		{"fsync EIO", faultfs.OpSync, &faultfs.Fault{Err: syscall.EIO}},
	}
	for _, f := range faults {
		for _, c := range calls {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				fs := faultfs.New()
				cfg := engine.Config{ExpiryInterval: -1, Durability: engine.Durability{Sync: engine.SyncAlways, RewritePercent: engine.NoAutoRewrite}}
				engine.SetLogFS(&cfg.Durability, fs)
				e, err := engine.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				b, err := embedded.New(embedded.Config{Engine: e})
				if err != nil {
					t.Fatal(err)
				}
				fs.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
					if op == f.op {
						return f.fault
					}
					return nil
				})
				err = c.do(b)
				if !errors.Is(err, store.ErrUnavailable) {
					t.Fatalf("err = %v, want store.ErrUnavailable", err)
				}
				if n := e.Len(); n != 0 {
					t.Fatalf("%d entries in memory after a write that could not be logged", n)
				}
			})
		}
	}
}
