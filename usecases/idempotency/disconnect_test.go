package idempotency_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
