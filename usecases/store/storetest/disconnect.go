package storetest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// disconnectServer serves h over real TCP and reports on served each time h
// has returned, so that a test can wait until the middleware finished its
// work after a client went away.
func disconnectServer(t *testing.T, h http.Handler) (srv *httptest.Server, served chan struct{}) {
	t.Helper()
	served = make(chan struct{}, 16)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		served <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return srv, served
}

// gone blocks until the client of r has disconnected (the server cancels
// the request's context when it sees the connection close), or fails t
// after a minute.
func gone(t *testing.T, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
		t.Error("the server never noticed the client disconnecting")
	}
}

// impatientDo sends req with a client that gives up after a short timeout,
// as a mobile client on a bad network does; it expects the request to fail.
func impatientDo(t *testing.T, req *http.Request) {
	t.Helper()
	c := &http.Client{Timeout: 200 * time.Millisecond}
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the impatient client got a response (%s); the handler was meant to outlive it", resp.Status)
	}
}

// send sends a request and returns its status, body and response headers.
func send(t *testing.T, method, url, body string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// counter counts handler runs.
type counter struct{ atomic.Int64 }
