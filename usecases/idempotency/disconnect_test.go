package idempotency_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// cancelling fails an idempotency decision because the caller's context
// ends during the round trip, as a remote client's does.
type cancelling struct {
	store.Backend
	cancel context.CancelFunc
}

func (c *cancelling) Idempotency(ctx context.Context, d *store.Idempotency) error {
	c.cancel()
	return ctx.Err()
}

// A client that goes away while its claim is in flight is not a store
// failure: Claim returns the context's error and counts no store_error,
// and the middleware neither runs the handler nor reports anything.
func TestDisconnectIsNotAStoreFailure(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := idempotency.New(idempotency.Config{Backend: &cancelling{Backend: b, cancel: cancel}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, idempotency.Key{Scope: "c", Key: "k"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Claim after the caller left: %v, want context.Canceled", err)
	}
	if got := maps.Collect(s.Events()); got["store_error"] != 0 {
		t.Errorf("Events = %v, want no store_error", got)
	}

	reqCtx, reqCancel := context.WithCancel(context.Background())
	s2, _ := idempotency.New(idempotency.Config{Backend: &cancelling{Backend: b, cancel: reqCancel}})
	reports := 0
	mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s2, Scope: func(*http.Request) string { return "c" },
		Options: httpmw.Options{OnError: func(*http.Request, error) { reports++ }}})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
	req := httptest.NewRequest(http.MethodPost, "/charge", strings.NewReader("1")).WithContext(reqCtx)
	req.Header.Set("Idempotency-Key", "k")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if ran || reports != 0 {
		t.Errorf("middleware for a client that left: handler ran %v, %d reports; want neither", ran, reports)
	}
}

// appliedThenCancelled applies the first claim, then fails it with the
// caller's context as ended: a remote store (Redis) runs a command whose
// reply the client abandoned when its context ended.
type appliedThenCancelled struct {
	store.Backend
	cancel context.CancelFunc
	once   bool
}

func (a *appliedThenCancelled) Idempotency(ctx context.Context, d *store.Idempotency) error {
	if d.Op != store.IdemClaim || a.once {
		return a.Backend.Idempotency(ctx, d)
	}
	a.once = true
	if err := a.Backend.Idempotency(context.WithoutCancel(ctx), d); err != nil {
		return err
	}
	a.cancel()
	return ctx.Err()
}

// A caller that leaves while its claim is in flight ran nothing, so its
// retry should run. But when the store applied the claim and only the
// reply was lost, the claim stays, ownerless: the retry is in progress for
// the lease and then a recovery, and without a Recover hook Do answers
// ErrNeedsRecovery on every retry until the record's retention ends.
// Claim cannot undo it safely: a Release would also delete a claim that
// landed as the recovery of a dead owner's (whose side effect may have
// happened), and the store's decision cannot tell the two apart. Known
// limitation, reported; the test shows it.
func TestClaimLostToDisconnectLeavesAClaim(t *testing.T) {
	t.Skip("known limitation: a claim applied by the store whose reply the caller abandoned is left in progress (needs a store decision that releases only a fresh claim)")
	b, clk := storetest.NewEmbedded(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := idempotency.New(idempotency.Config{Backend: &appliedThenCancelled{Backend: b, cancel: cancel}, Lease: time.Second})
	k := idempotency.Key{Scope: "acct", Operation: "charge", Key: "k1"}
	ran := 0
	fn := func(context.Context) ([]byte, error) { ran++; return []byte("ok"), nil }
	if _, _, err := s.Do(ctx, k, nil, fn); !errors.Is(err, context.Canceled) || ran != 0 {
		t.Fatalf("Do whose caller left during the claim: %v, ran %d; want context.Canceled, not run", err, ran)
	}
	clk.Advance(2 * time.Second)
	if res, _, err := s.Do(context.Background(), k, nil, fn); err != nil || string(res) != "ok" || ran != 1 {
		t.Errorf("retry: got (%q, %v) after %d runs, want it to run once", res, err, ran)
	}
}
