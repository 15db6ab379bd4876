package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// TestPrefixesIsolate: two backends with different prefixes on one server
// share nothing: the same key names hold separate values, counters, leases
// and fences, and a delete in one leaves the other's key. (Nested prefixes
// and keys crafted to look like a scope boundary: storetest's Scopes case,
// run on both backends.)
func TestPrefixesIsolate(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	c := srv.Client(t)
	a, _ := redisstore.New(redisstore.Config{Client: c, Prefix: "a:"})
	b, _ := redisstore.New(redisstore.Config{Client: c, Prefix: "b:"})
	if _, _, err := a.Set(ctx, "k", []byte("A"), store.SetOptions{TTL: store.NoTTL}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Get(ctx, "k"); ok || err != nil {
		t.Errorf("b.Get of a's key: got (%v, %v), want a miss", ok, err)
	}
	fw := func(be *redisstore.Backend) int64 {
		d := &store.FixedWindow{Key: "fw", Limit: 3, Window: time.Hour, Cost: 1}
		if err := be.FixedWindow(ctx, d); err != nil {
			t.Fatal(err)
		}
		return d.Remaining
	}
	fw(a)
	fw(a)
	if got := fw(b); got != 2 {
		t.Errorf("b's window after two admissions in a's: remaining %d, want 2", got)
	}
	acq := func(be *redisstore.Backend) *store.Lease {
		d := &store.Lease{Op: store.LeaseAcquire, Key: "{l}", FenceKey: "{l}:f", Holder: "h", TTL: time.Hour}
		if err := be.Lease(ctx, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	acq(a)
	if d := acq(b); !d.OK || d.Current.Token != 1 {
		t.Errorf("b's lease while a's is held: got (ok %v, token %d), want (true, 1)", d.OK, d.Current.Token)
	}
	if ok, err := b.Delete(ctx, "k"); ok || err != nil {
		t.Errorf("b.Delete of a's key: got (%v, %v), want (false, nil)", ok, err)
	}
	if it, ok, err := a.Get(ctx, "k"); !ok || err != nil || string(it.Value) != "A" {
		t.Errorf("a's key after b's delete: got (%q, %v, %v), want \"A\"", it.Value, ok, err)
	}
}
