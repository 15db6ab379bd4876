package lease_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// Store failures are returned and also reported with the lease's name and
// the operation; a renewal that finds the lease lost is logged.
func TestFailuresAreReported(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	logs, logger := storetest.NewLogs()
	var hooked []string
	m, err := lease.New(lease.Config{Backend: flaky, TTL: time.Second, Logger: logger,
		OnError: func(_ context.Context, name string, err error) { hooked = append(hooked, name) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, _, ok, err := m.Acquire(ctx, "reindex", "worker-1")
	if !ok || err != nil {
		t.Fatalf("Acquire: got (%v, %v), want the lease", ok, err)
	}
	clk.Advance(2 * time.Second)
	if ok, err := m.Renew(ctx, l); ok || err != nil {
		t.Fatalf("Renew after expiry: got (%v, %v), want (false, nil)", ok, err)
	}
	flaky.Down.Store(true)
	if _, _, _, err := m.Acquire(ctx, "reindex", "worker-1"); err == nil {
		t.Fatal("Acquire with the store down: got nil, want an error")
	}
	recs := logs.Records()
	if len(recs) != 2 {
		t.Fatalf("records: got %v, want 2", recs)
	}
	if r := recs[0]; r.Msg != "tide: lease lost before renewal" || r.Attrs["key"] != "reindex" || r.Attrs["token"] != "1" {
		t.Errorf("first record: got %v, want the lost lease with its name and token", r)
	}
	if r := recs[1]; r.Attrs["key"] != "reindex" || r.Attrs["op"] != "acquire" || !strings.Contains(r.Attrs["err"], "injected failure") {
		t.Errorf("second record: got %v, want the store failure with name, op and cause", r)
	}
	if strings.Join(hooked, ",") != "reindex" {
		t.Errorf("hook: got %q, want one call for reindex", hooked)
	}
}
