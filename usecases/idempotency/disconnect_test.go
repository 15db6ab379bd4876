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
// retry must run. When the store applies the claim and the caller's
// context ends before the reply (appliedThenCancelled), a claim whose
// reply the caller abandoned would stay, ownerless: the retry in progress
// for the lease and then a recovery, and, without a Recover hook, Do
// answering ErrNeedsRecovery until the record's retention ends. Claim
// waits for the store's answer whatever the caller's context does, and
// releases a claim it won fresh for a caller that left.
func TestClaimLostToDisconnectLeavesNoClaim(t *testing.T) {
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

// A caller that leaves while its claim lands as the recovery of a lapsed
// claim must not release it: the earlier run's side effect may have
// happened, so the next claim after the lease must still be a recovery,
// never a fresh Execute.
func TestClaimLostToDisconnectKeepsARecovery(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	ctx, cancel := context.WithCancel(context.Background())
	wrapped := &appliedThenCancelled{Backend: b, cancel: cancel}
	wrapped.once = true // the first claim (the owner that dies) goes through
	s, _ := idempotency.New(idempotency.Config{Backend: wrapped, Lease: time.Second})
	k := idempotency.Key{Scope: "acct", Operation: "charge", Key: "k1"}
	if c, err := s.Claim(context.Background(), k, nil); err != nil || c.State != idempotency.Execute {
		t.Fatalf("first claim: got (%v, %v), want Execute", c.State, err)
	}
	clk.Advance(2 * time.Second) // the owner died: its lease lapsed
	wrapped.once = false         // the next claim is applied, then its caller leaves
	if _, err := s.Claim(ctx, k, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("claim whose caller left: got %v, want context.Canceled", err)
	}
	if c, err := s.Claim(context.Background(), k, nil); err != nil || c.State != idempotency.InProgress {
		t.Errorf("claim right after: got (%v, %v), want InProgress (the left caller's recovery holds the lease)", c.State, err)
	}
	clk.Advance(2 * time.Second)
	if c, err := s.Claim(context.Background(), k, nil); err != nil || c.State != idempotency.Recover {
		t.Errorf("claim after the lease: got (%v, %v), want Recover, not a fresh Execute", c.State, err)
	}
}
