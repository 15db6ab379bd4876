package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/lease"
)

// RunLease runs package lease's contract suite on a backend.
func RunLease(t *testing.T, newFixture NewFunc) {
	newFixture = instrument(newFixture)
	ctx := context.Background()
	t.Run("Lifecycle", func(t *testing.T) {
		f := newFixture(t)
		u := f.unit()
		m, err := lease.New(lease.Config{Backend: f.Backend, TTL: 10 * u})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := m.Inspect(ctx, "orders"); ok || err != nil {
			t.Fatalf("Inspect a free lease: got (%v, %v), want (false, nil)", ok, err)
		}
		a, _, ok, err := m.Acquire(ctx, "orders", "A")
		if !ok || err != nil || a.Token != 1 {
			t.Fatalf("Acquire: got (%+v, %v, %v), want token 1", a, ok, err)
		}
		if _, info, ok, _ := m.Acquire(ctx, "orders", "B"); ok || info.Holder != "A" || info.Token != 1 {
			t.Fatalf("Acquire of a held lease: got (ok %v, %+v), want refused naming A/1", ok, info)
		}
		info, ok, _ := m.Inspect(ctx, "orders")
		if !ok || info.Holder != "A" || info.Fence != 1 {
			t.Fatalf("Inspect: got (%+v, %v), want A holding, fence 1", info, ok)
		}
		f.checkDur(t, "TTL", info.TTL, 10*u)
		if ok, err := m.Renew(ctx, a); !ok || err != nil {
			t.Fatalf("Renew by the holder: got (%v, %v), want (true, nil)", ok, err)
		}
		fake := *a
		fake.Holder = "B"
		if ok, _ := m.Renew(ctx, &fake); ok {
			t.Fatal("Renew by another holder succeeded")
		}
		if ok, _ := m.Release(ctx, &fake); ok {
			t.Fatal("Release by another holder succeeded")
		}
		if ok, err := m.Release(ctx, a); !ok || err != nil {
			t.Fatalf("Release: got (%v, %v), want (true, nil)", ok, err)
		}
		if ok, _ := m.Release(ctx, a); ok {
			t.Fatal("second Release succeeded")
		}
		b, _, ok, _ := m.Acquire(ctx, "orders", "B")
		if !ok || b.Token != 2 {
			t.Fatalf("Acquire after release: got (%+v, %v), want token 2", b, ok)
		}
		if _, _, _, err := m.Acquire(ctx, "", "A"); !errors.Is(err, lease.ErrInvalidName) {
			t.Fatalf("Acquire with an empty name: got %v, want ErrInvalidName", err)
		}
	})
	t.Run("PausedHolder", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		u := f.unit()
		m, _ := lease.New(lease.Config{Backend: f.Backend, TTL: 5 * u})
		var res lease.Resource
		a, _, _, _ := m.Acquire(ctx, "db", "A")
		if err := res.Check(a.Token); err != nil {
			t.Fatalf("A's first write: %v", err)
		}
		f.Advance(6 * u) // A stalls past its expiry
		b, _, ok, _ := m.Acquire(ctx, "db", "B")
		if !ok || b.Token <= a.Token {
			t.Fatalf("B's acquire after A's expiry: got (%+v, %v), want a token above %d", b, ok, a.Token)
		}
		if err := res.Check(b.Token); err != nil {
			t.Fatalf("B's write: %v", err)
		}
		if err := res.Check(a.Token); !errors.Is(err, lease.ErrStaleToken) {
			t.Fatalf("A's write after waking: got %v, want ErrStaleToken", err)
		}
		if ok, _ := m.Renew(ctx, a); ok {
			t.Fatal("A renewed a lease B holds")
		}
		if err := res.Check(b.Token); err != nil {
			t.Fatalf("B's second write: %v", err)
		}
	})
	t.Run("FenceSurvivesLossOfTheCounter", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		m, _ := lease.New(lease.Config{Backend: f.Backend, TTL: f.unit(), Floor: lease.ClockFloor(f.Backend)})
		a, _, _, _ := m.Acquire(ctx, "x", "A")
		m.Release(ctx, a)
		// Simulate a restart of a non-durable store: the counter is gone.
		if _, err := f.Backend.Delete(ctx, "tide:lease:{x}:fence"); err != nil {
			t.Fatal(err)
		}
		f.Advance(f.unit())
		b, _, ok, _ := m.Acquire(ctx, "x", "B")
		if !ok || b.Token <= a.Token {
			t.Fatalf("token after losing the counter: got %d, want > %d", b.Token, a.Token)
		}
	})
	t.Run("ConcurrentHoldersFenced", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		u := f.unit()
		m, _ := lease.New(lease.Config{Backend: f.Backend, TTL: 2 * u})
		var res lease.Resource
		type write struct {
			token  uint64
			holder string
		}
		var mu sync.Mutex
		var log []write
		var accepted, rejected atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				me := fmt.Sprint("h", i)
				for {
					select {
					case <-stop:
						return
					default:
					}
					l, _, ok, err := m.Acquire(ctx, "shared", me)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						continue
					}
					// Write a few times; the clock may pass the lease's
					// expiry meanwhile (a paused holder), and another
					// holder may acquire and write.
					for range 3 {
						err := res.Do(l.Token, func() error {
							mu.Lock()
							log = append(log, write{l.Token, me})
							mu.Unlock()
							return nil
						})
						if err == nil {
							accepted.Add(1)
						} else {
							rejected.Add(1)
						}
					}
					if i%2 == 0 {
						m.Release(ctx, l) // the odd ones just let it expire
					}
				}
			}()
		}
		for range 40 {
			time.Sleep(time.Millisecond)
			f.Advance(u)
		}
		close(stop)
		wg.Wait()
		owner := map[uint64]string{}
		for i, w := range log {
			if i > 0 && w.token < log[i-1].token {
				t.Fatalf("write %d: token %d accepted after %d", i, w.token, log[i-1].token)
			}
			if o, ok := owner[w.token]; ok && o != w.holder {
				t.Fatalf("token %d accepted from two holders, %s and %s", w.token, o, w.holder)
			}
			owner[w.token] = w.holder
		}
		if len(owner) < 2 {
			t.Fatalf("only %d distinct holders wrote; the test did not exercise handover", len(owner))
		}
		t.Logf("%d accepted, %d rejected writes across %d leases", accepted.Load(), rejected.Load(), len(owner))
	})
}
