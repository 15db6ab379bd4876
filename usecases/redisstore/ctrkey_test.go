package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// TestCounterKeysUnreachable: the per-slot version counters ("tide:ver:{0}",
// "tide:ver:{1}", … after Prefix) share the keyspace of the keys callers
// pass, so a caller's key must never reach one. Before the namespace was
// reserved, Set of "tide:ver:{0}" replaced slot crc16("0")'s counter with
// a hash and every later write in that slot failed (ErrCorrupt, WRONGTYPE
// in nextver), and Delete of it dropped the counter. Now Set and the
// decisions refuse such a key (ErrInvalidArgument), Get, Delete and
// CompareAndDelete report it missing, and writes in the slot go on with
// growing versions.
func TestCounterKeysUnreachable(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	b, err := redisstore.New(redisstore.Config{Client: srv.Client(t), Prefix: "p:"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"0", "1", "a"} {
		k := "tide:ver:{" + tag + "}"
		other := "user{" + tag + "}" // a key of the same slot: its writes use k's counter
		before, ok, err := b.Set(ctx, other, []byte("before"), store.SetOptions{TTL: store.NoTTL})
		if !ok || err != nil {
			t.Fatalf("Set(%q): got (%v, %v), want (true, nil)", other, ok, err)
		}
		calls := []struct {
			name string
			err  error
		}{
			{"Set", third(b.Set(ctx, k, []byte("mine"), store.SetOptions{TTL: store.NoTTL}))},
			{"FixedWindow", b.FixedWindow(ctx, &store.FixedWindow{Key: k, Limit: 1, Window: time.Second, Cost: 1})},
			{"Lease", b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: k, FenceKey: "f{" + tag + "}", Holder: "A", TTL: time.Minute})},
			{"Lease fence", b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: "l{" + tag + "}", FenceKey: k, Holder: "A", TTL: time.Minute})},
		}
		for _, c := range calls {
			if !errors.Is(c.err, store.ErrInvalidArgument) {
				t.Errorf("%s on %q: got %v, want ErrInvalidArgument", c.name, k, c.err)
			}
		}
		if _, found, err := b.Get(ctx, k); found || err != nil {
			t.Errorf("Get(%q): got (found %v, %v), want a miss", k, found, err)
		}
		if ok, err := b.Delete(ctx, k); ok || err != nil {
			t.Errorf("Delete(%q): got (%v, %v), want (false, nil)", k, ok, err)
		}
		if ok, err := b.CompareAndDelete(ctx, k, 1); ok || err != nil {
			t.Errorf("CompareAndDelete(%q): got (%v, %v), want (false, nil)", k, ok, err)
		}
		after, ok, err := b.Set(ctx, other, []byte("after"), store.SetOptions{TTL: store.NoTTL})
		if !ok || err != nil || after <= before {
			t.Errorf("Set(%q) after the calls on %q: got (v%d, %v, %v), want (a version above v%d, true, nil)", other, k, after, ok, err, before)
		}
	}
}

func third[A, B any](_ A, _ B, err error) error { return err }

// TestCounterKeysUnreachableFromNoScope: a backend without a prefix
// addresses every scope's keys (store doc, "Scopes"), but not a scope's
// version counters: its key "p:tide:ver:{0}" is scope "p:"'s counter of
// slot crc16("0"). Before such keys were reserved on every backend, a Set
// of it there replaced the counter with a hash, and every later write of
// scope "p:" in that slot failed (ErrCorrupt, WRONGTYPE in nextver).
func TestCounterKeysUnreachableFromNoScope(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	c := srv.Client(t)
	all, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	p, err := redisstore.New(redisstore.Config{Client: c, Prefix: "p:"})
	if err != nil {
		t.Fatal(err)
	}
	before, ok, err := p.Set(ctx, "user{0}", []byte("before"), store.SetOptions{TTL: store.NoTTL})
	if !ok || err != nil {
		t.Fatalf("scope p: Set: got (%v, %v), want (true, nil)", ok, err)
	}
	k := "p:" + store.ReservedPrefix + "{0}"
	if _, ok, err := all.Set(ctx, k, []byte("x"), store.SetOptions{TTL: store.NoTTL}); ok || !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("no scope: Set(%q): got (%v, %v), want ErrInvalidArgument", k, ok, err)
	}
	after, ok, err := p.Set(ctx, "user{0}", []byte("after"), store.SetOptions{TTL: store.NoTTL})
	if !ok || err != nil || after <= before {
		t.Errorf("scope p: Set after the unscoped Set: got (v%d, %v, %v), want (a version above v%d, true, nil)", after, ok, err, before)
	}
	if _, found, err := all.Get(ctx, k); found || err != nil {
		t.Errorf("no scope: Get(%q): got (%v, %v), want a miss", k, found, err)
	}
	if ok, err := all.Delete(ctx, k); ok || err != nil {
		t.Errorf("no scope: Delete(%q): got (%v, %v), want (false, nil)", k, ok, err)
	}
}
