package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunIdempotency(t, storetest.Embedded)
}

func TestNewRejects(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for i, c := range []idempotency.Config{
		{},
		{Backend: b, Retention: -1},
		{Backend: b, Retention: time.Second, Lease: time.Minute},
	} {
		if _, err := idempotency.New(c); !errors.Is(err, idempotency.ErrInvalidConfig) {
			t.Errorf("case %d: got %v, want ErrInvalidConfig", i, err)
		}
	}
}

func TestStoreDown(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	s, _ := idempotency.New(idempotency.Config{Backend: flaky})
	flaky.Down.Store(true)
	ran := false
	_, _, err := s.Do(context.Background(), idempotency.Key{Key: "k"}, nil, func(context.Context) ([]byte, error) { ran = true; return nil, nil })
	if err == nil || ran {
		t.Fatalf("store down: got (ran %v, %v), want an error and no execution", ran, err)
	}
}

func TestMiddleware(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	s, _ := idempotency.New(idempotency.Config{Backend: b, Lease: 10 * time.Second})
	var charges atomic.Int64
	block := make(chan struct{})
	entered := make(chan struct{}, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-block
		}
		if r.URL.Path == "/fail" {
			http.Error(w, "downstream down", http.StatusBadGateway)
			return
		}
		n := charges.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Charge", fmt.Sprint(n))
		w.Header().Add("X-Raw", "\xff\xfe")
		w.Header().Add("X-Raw", "two")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "charged %s (#%d)", body, n)
	})
	mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(r *http.Request) string { return r.Header.Get("X-User") }})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(handler)
	do := func(method, path, key, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		req.Header.Set("X-User", "u1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	type want struct {
		code     int
		body     string
		replayed string
	}
	steps := []struct {
		method, path, key, body string
		want                    want
	}{
		{"POST", "/pay", "", "10", want{400, "Idempotency-Key header required\n", ""}},
		{"GET", "/pay", "", "", want{201, "charged  (#1)", ""}}, // not required for GET
		{"POST", "/pay", "k1", "10", want{201, "charged 10 (#2)", ""}},
		{"POST", "/pay", "k1", "10", want{201, "charged 10 (#2)", "true"}},
		{"POST", "/pay", "k1", "99", want{422, "Idempotency-Key reused with a different request\n", ""}},
		{"POST", "/fail", "k2", "1", want{502, "downstream down\n", ""}},
		{"POST", "/fail", "k2", "1", want{502, "downstream down\n", ""}}, // 5xx released: executed again
	}
	for i, st := range steps {
		rec := do(st.method, st.path, st.key, st.body)
		got := want{rec.Code, rec.Body.String(), rec.Header().Get(idempotency.ReplayedHeader)}
		if got != st.want {
			t.Errorf("step %d: got %+v, want %+v", i, got, st.want)
		}
	}
	if rec := do("POST", "/pay", "k1", "10"); rec.Header().Get("X-Charge") != "2" || !slices.Equal(rec.Header().Values("X-Raw"), []string{"\xff\xfe", "two"}) {
		t.Errorf("replayed headers: got X-Charge %q X-Raw %q, want \"2\" and the raw bytes", rec.Header().Get("X-Charge"), rec.Header().Values("X-Raw"))
	}
	// In progress → 409 with Retry-After.
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- do("POST", "/slow", "k3", "5") }()
	<-entered
	clk.Advance(3 * time.Second)
	rec := do("POST", "/slow", "k3", "5")
	if rec.Code != http.StatusConflict || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("duplicate in progress: got %d Retry-After %q, want 409 \"1\"", rec.Code, rec.Header().Get("Retry-After"))
	}
	close(block)
	if first := <-done; first.Code != http.StatusCreated {
		t.Errorf("first request: got %d, want 201", first.Code)
	}
	if charges.Load() != 3 {
		t.Errorf("charges: got %d, want 3", charges.Load())
	}
}
