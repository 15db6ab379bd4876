package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// A client cannot make a fresh request look like a recovery: the
// Idempotency-Recovery header it sends is removed before the handler runs.
func TestRecoveryHeaderCannotBeForged(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	s, _ := idempotency.New(idempotency.Config{Backend: b})
	mw, _ := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "acct" }})
	var seen string
	var fromCtx bool
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get(idempotency.RecoveryHeader)
		_, fromCtx = idempotency.RecoveryFrom(r.Context())
	}))
	req := httptest.NewRequest("POST", "/charge", strings.NewReader("10"))
	req.Header.Set("Idempotency-Key", "k1")
	req.Header.Set(idempotency.RecoveryHeader, "forged")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if seen != "" || fromCtx {
		t.Errorf("fresh request with a forged header: handler saw header %q, context recovery %v; want neither", seen, fromCtx)
	}
}

// watched signals the first claim answered "in progress": a duplicate has
// arrived while the first request runs.
type watched struct {
	idempotency.Backend
	inProgress atomic.Int64
	duplicate  chan struct{}
}

func (w *watched) Idempotency(ctx context.Context, d *store.Idempotency) error {
	err := w.Backend.Idempotency(ctx, d)
	if err == nil && d.Op == store.IdemClaim && d.Outcome == store.IdemInProgress && w.inProgress.Add(1) == 1 {
		close(w.duplicate)
	}
	return err
}

// A duplicate that arrives while the first request runs waits for its
// outcome (WaitInProgress) instead of a 409: it gets the replayed response
// once the first completes, or runs the handler itself if the first
// released the claim with a 5xx; when the wait runs out it gets 409 with a
// short Retry-After, not the lease's remaining time.
func TestDuplicateWaitsForTheFirst(t *testing.T) {
	cases := []struct {
		name        string
		wait        time.Duration
		firstStatus int
		want        string // the duplicate's status, body, Replayed and Retry-After
		wantRuns    int64
	}{
		{"first completes", 10 * time.Second, http.StatusCreated, "201 run 1 true ", 1},
		{"first fails with 5xx", 10 * time.Second, http.StatusBadGateway, "201 run 2  ", 2},
		{"wait runs out", 20 * time.Millisecond, http.StatusCreated, "409 a request with this Idempotency-Key is in progress\n  1", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := storetest.NewEmbedded(t)
			wb := &watched{Backend: b, duplicate: make(chan struct{})}
			s, _ := idempotency.New(idempotency.Config{Backend: wb, Lease: 30 * time.Second})
			mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "acct" }, WaitInProgress: c.wait})
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int64
			release, entered := make(chan struct{}), make(chan struct{})
			h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := runs.Add(1)
				if n == 1 {
					close(entered)
					<-release
					w.WriteHeader(c.firstStatus)
				} else {
					w.WriteHeader(http.StatusCreated)
				}
				w.Write([]byte("run " + string(rune('0'+n))))
			}))
			send := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest("POST", "/charge", strings.NewReader("10"))
				req.Header.Set("Idempotency-Key", "k1")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			first := make(chan *httptest.ResponseRecorder)
			go func() { first <- send() }()
			<-entered
			second := make(chan *httptest.ResponseRecorder)
			go func() { second <- send() }()
			<-wb.duplicate // the duplicate has seen the claim in progress
			var dup *httptest.ResponseRecorder
			if c.wait < time.Second {
				dup = <-second // the wait runs out while the first is still blocked
				close(release)
			} else {
				close(release)
				dup = <-second
			}
			<-first
			got := strings.Join([]string{dup.Result().Status[:3], dup.Body.String(), dup.Header().Get(idempotency.ReplayedHeader), dup.Header().Get("Retry-After")}, " ")
			if got != c.want || runs.Load() != c.wantRuns {
				t.Errorf("duplicate: got %q after %d runs, want %q after %d", got, runs.Load(), c.want, c.wantRuns)
			}
		})
	}
}

// WaitInProgress beyond the lease (the longest a live first request can
// hold the key) or negative is refused at construction.
func TestWaitInProgressValidated(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	s, _ := idempotency.New(idempotency.Config{Backend: b, Lease: time.Second})
	for _, d := range []time.Duration{-1, time.Second + 1} {
		if _, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "" }, WaitInProgress: d}); err == nil {
			t.Errorf("WaitInProgress %v: got nil, want ErrInvalidConfig", d)
		}
	}
}

// Waiting duplicates are bounded: with MaxWaiting 1, a second duplicate
// that arrives while one already waits is answered 409 at once instead of
// holding another goroutine that polls the store.
func TestWaitingDuplicatesAreBounded(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	wb := &watched{Backend: b, duplicate: make(chan struct{})}
	s, _ := idempotency.New(idempotency.Config{Backend: wb, Lease: 30 * time.Second})
	mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "acct" },
		WaitInProgress: 20 * time.Second, MaxWaiting: 1})
	if err != nil {
		t.Fatal(err)
	}
	release, entered := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			close(entered)
			<-release
		}
		w.WriteHeader(http.StatusCreated)
	}))
	send := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/charge", strings.NewReader("10"))
		req.Header.Set("Idempotency-Key", "k1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	first, waiter := make(chan *httptest.ResponseRecorder), make(chan *httptest.ResponseRecorder)
	go func() { first <- send() }()
	<-entered
	go func() { waiter <- send() }()
	// The waiter has asked twice: it is inside its wait.
	for wb.inProgress.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	third := make(chan *httptest.ResponseRecorder)
	go func() { third <- send() }()
	select {
	case rec := <-third:
		if rec.Code != http.StatusConflict {
			t.Errorf("third request while one waits: status %d, want 409", rec.Code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("third request waited although MaxWaiting = 1")
	}
	close(release)
	<-first
	if rec := <-waiter; rec.Code != http.StatusCreated {
		t.Errorf("the waiting duplicate: status %d, want the replayed 201", rec.Code)
	}
}
