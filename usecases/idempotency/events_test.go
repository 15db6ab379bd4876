package idempotency_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// TestEventsCountClaimOutcomes: each Claim outcome (a new execution, a
// duplicate in progress, a replay, a mismatch, a store failure) is counted
// once.
func TestEventsCountClaimOutcomes(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	s, err := idempotency.New(idempotency.Config{Backend: flaky})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := idempotency.Key{Scope: "cust-1", Operation: "charge", Key: "order-1"}
	c, err := s.Claim(ctx, k, []byte("fp")) // executed
	if err != nil || c.State != idempotency.Execute {
		t.Fatalf("first Claim = %v, %v; want Execute", c.State, err)
	}
	if c2, err := s.Claim(ctx, k, []byte("fp")); err != nil || c2.State != idempotency.InProgress {
		t.Fatalf("duplicate Claim = %v, %v; want InProgress", c2.State, err)
	}
	if _, err := s.Complete(ctx, k, c.Owner, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if c3, err := s.Claim(ctx, k, []byte("fp")); err != nil || c3.State != idempotency.Completed {
		t.Fatalf("retry Claim = %v, %v; want Completed", c3.State, err)
	}
	if _, err := s.Claim(ctx, k, []byte("other")); !errors.Is(err, idempotency.ErrMismatch) {
		t.Fatalf("Claim with another fingerprint: %v, want ErrMismatch", err)
	}
	flaky.Down.Store(true)
	if _, err := s.Claim(ctx, k, []byte("fp")); err == nil {
		t.Fatal("Claim with the store down: got nil error")
	}
	got := maps.Collect(s.Events())
	want := map[string]uint64{"executed": 1, "recovered": 0, "in_progress": 1, "replayed": 1, "mismatch": 1, "store_error": 1}
	if !maps.Equal(got, want) {
		t.Errorf("Events = %v, want %v", got, want)
	}
}
