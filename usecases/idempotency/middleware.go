package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/store"
)

// MiddlewareConfig configures NewMiddleware. Zero fields mean defaults.
type MiddlewareConfig struct {
	// Store holds the records. Required.
	Store *Store
	// Required reports whether a request must carry an Idempotency-Key.
	// nil means POST and PATCH must; other methods without the header pass
	// straight through.
	Required func(r *http.Request) bool
	// Scope returns the authenticated caller's identity (an account, an
	// API token), so that keys of different callers never collide: without
	// it two callers sending the same key and body would receive each
	// other's stored response. Required; a service that truly has a single
	// caller says so with a function returning a constant.
	Scope func(r *http.Request) string
	// MaxBody bounds the request body read for the fingerprint (the body is
	// buffered in memory). 0 means 1 MiB; at most MaxBodyLimit; larger
	// bodies get 413.
	MaxBody int64
	// WaitInProgress is how long a duplicate that arrives while the first
	// request with its key runs waits for that request's outcome before
	// answering 409. While it waits it asks the store again, with backoff
	// from 10 ms up to 250 ms between asks, and ends as soon as the
	// outcome is known: the stored response is replayed, or, if the first
	// request released the claim (a 5xx) or its lease lapsed, the
	// duplicate runs the handler itself as any retry would. 0 (the
	// default) does not wait: 409 at once. At most the Store's Lease.
	WaitInProgress time.Duration
	// MaxWaiting bounds how many duplicates may wait at once in this
	// middleware (each holds its goroutine and asks the store about four
	// times a second); one more is answered 409 at once. 0 means 1024.
	MaxWaiting int
	// Options customise refusals (400, 409, 413, 422, 500, 503) and report
	// what a response cannot tell: a completion or release that did not
	// reach the store after the handler ran (the record stays in progress
	// and a retry after the lease is a recovery), a completion the store
	// ignored (another owner had taken the claim over), a stored response
	// that cannot be replayed. The zero value answers in plain text and
	// reports nothing.
	Options httpmw.Options
}

// MaxBodyLimit bounds MiddlewareConfig.MaxBody.
const MaxBodyLimit = 1 << 30

// validate fills in defaults and reports a configuration the middleware
// cannot keep its promises with.
func (cfg *MiddlewareConfig) validate() error {
	switch {
	case cfg.Store == nil:
		return fmt.Errorf("%w: MiddlewareConfig.Store is nil", ErrInvalidConfig)
	case cfg.Scope == nil:
		return fmt.Errorf("%w: MiddlewareConfig.Scope is nil (keys of different callers would collide)", ErrInvalidConfig)
	case cfg.MaxBody < 0 || cfg.MaxBody > MaxBodyLimit:
		return fmt.Errorf("%w: MiddlewareConfig.MaxBody = %d, want 0..%d", ErrInvalidConfig, cfg.MaxBody, MaxBodyLimit)
	case cfg.MaxWaiting < 0:
		return fmt.Errorf("%w: MiddlewareConfig.MaxWaiting = %d, want ≥ 0", ErrInvalidConfig, cfg.MaxWaiting)
	case cfg.WaitInProgress < 0 || cfg.WaitInProgress > cfg.Store.cfg.Lease:
		return fmt.Errorf("%w: MiddlewareConfig.WaitInProgress = %v, want 0..%v (the Store's Lease)", ErrInvalidConfig, cfg.WaitInProgress, cfg.Store.cfg.Lease)
	}
	if cfg.Required == nil {
		cfg.Required = func(r *http.Request) bool { return r.Method == http.MethodPost || r.Method == http.MethodPatch }
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.MaxWaiting == 0 {
		cfg.MaxWaiting = 1024
	}
	return nil
}

// RecoveryHeader is set on the request passed to the handler when it runs
// as the recovery of a claim whose previous owner died before completing:
// the handler must check downstream whether the side effect already
// happened before doing it again. Its value is the dead owner's token. A
// header of that name sent by the client is removed, so it cannot be
// forged; RecoveryFrom reports the same from the request's context.
const RecoveryHeader = "Idempotency-Recovery"

type recoveryKey struct{}

// RecoveryFrom reports whether the request whose context is ctx runs as a
// recovery (see RecoveryHeader), and the dead owner's token.
func RecoveryFrom(ctx context.Context) (prevOwner string, ok bool) {
	prevOwner, ok = ctx.Value(recoveryKey{}).(string)
	return prevOwner, ok
}

// ReplayedHeader is set to "true" on a replayed response.
const ReplayedHeader = "Idempotent-Replayed"

// NewMiddleware returns a middleware that makes the next handler
// idempotent on the Idempotency-Key request header (IETF
// draft-ietf-httpapi-idempotency-key-header), or an error wrapping
// ErrInvalidConfig if cfg has no Store or no Scope, or an out-of-range
// MaxBody. Answers:
//
//   - missing where required: 400 Bad Request;
//   - same key, method and path, different payload (query or body): 422
//     Unprocessable Content (the same key on another method or path is
//     another key: see below);
//   - same key while the first request runs: the duplicate waits up to
//     WaitInProgress for the first one's outcome (by default it does not
//     wait), then answers 409 Conflict with Retry-After: 1 (a short
//     retry: the first request is likely to finish well before its
//     lease, which only bounds a crashed one);
//   - same key after completion: the stored status, headers and body,
//     with Idempotent-Replayed: true; a failure recorded on the key by
//     Store.Fail or Do (a Permanent error) answers 500 "request failed",
//     its cause (wrapping ErrFailed) in the Problem's Err only;
//   - otherwise next runs once; a response below 500 is stored and
//     replayed to duplicates for the retention period; a 5xx response
//     releases the claim, so a retry executes again.
//
// The handler's response is buffered: the ResponseWriter it gets starts
// with no header, and a header it sets replaces one of that name set
// before by an outer middleware, on the first response and on replays
// alike. Informational responses (1xx, such as 103 Early Hints) are
// dropped: the status is the handler's final one.
//
// The key is scoped to Scope(r) and the method and path, as the client
// sent them (r.RequestURI: a router that rewrites r.URL, as
// http.StripPrefix does, does not merge two routes' keys). Store errors
// answer 503 without running next. The outcome is recorded with a context
// the client cannot cancel (bounded by the Store's FinishTimeout), so a
// client that disconnects while next runs does not make a retry run it
// again; a failure to record is reported through cfg.Options. Refusals are
// written by cfg.Options' Responder.
//
// # When the handler runs again
//
// The handler runs once per key, except:
//
//   - after a 5xx response the claim is released: the next request with
//     the key runs the handler afresh (use 5xx only for failures before
//     any side effect; a recovery's 5xx releases too, so answer 5xx from a
//     recovery only once you know the earlier run's side effect did not
//     happen);
//   - when an earlier run left no outcome — its process died, it
//     panicked, it ran longer than the Store's Lease, or its outcome could
//     not be recorded (reported through cfg.Options) — the first request
//     with the key after the lease lapsed runs the handler as a recovery:
//     its request carries the RecoveryHeader (the dead owner's token), and
//     RecoveryFrom(r.Context()) reports it. The side effect may have
//     happened: the handler must check downstream (for example by the
//     key) before doing it again.
func NewMiddleware(cfg MiddlewareConfig) (func(http.Handler) http.Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	waiting := new(atomic.Int64) // duplicates waiting, shared by every handler it wraps
	return func(next http.Handler) http.Handler { return middleware(cfg, waiting, next) }, nil
}

func middleware(cfg MiddlewareConfig, waiting *atomic.Int64, next http.Handler) http.Handler {
	required, maxBody, opts := cfg.Required, cfg.MaxBody, cfg.Options
	refuse := func(w http.ResponseWriter, r *http.Request, status int, msg string, err error) {
		opts.Respond(w, r, httpmw.Problem{Status: status, Message: msg, Err: err})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only the middleware says a request is a recovery, on every path
		// (a request without a key passes through too).
		r.Header.Del(RecoveryHeader)
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			if required(r) {
				refuse(w, r, http.StatusBadRequest, "Idempotency-Key header required", ErrInvalidKey)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		var body []byte
		if r.Body != nil {
			b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			if err != nil {
				refuse(w, r, http.StatusBadRequest, "cannot read body", err)
				return
			}
			if int64(len(b)) > maxBody {
				refuse(w, r, http.StatusRequestEntityTooLarge, "body too large", nil)
				return
			}
			body = b
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		path, target := requestTarget(r)
		k := Key{Scope: cfg.Scope(r), Operation: r.Method + " " + path, Key: key}
		attrs := []slog.Attr{slog.String("key", cfg.Store.StoreKey(k)), slog.String("operation", k.Operation)}
		fp := Fingerprint([]byte(r.Method), []byte(target), body)
		c, err := cfg.Store.Claim(r.Context(), k, fp)
		switch {
		case errors.Is(err, ErrMismatch):
			refuse(w, r, http.StatusUnprocessableEntity, "Idempotency-Key reused with a different request", err)
			return
		case err != nil && r.Context().Err() != nil:
			return // the client went away before its claim was decided: nothing ran, nothing to answer
		case err != nil:
			opts.Report(r, slog.LevelError, "tide: idempotency claim failed; request refused", err, attrs...)
			refuse(w, r, http.StatusServiceUnavailable, "idempotency store unavailable", err)
			return
		}
		if c.State == InProgress && cfg.WaitInProgress > 0 {
			if waiting.Add(1) <= int64(cfg.MaxWaiting) { // else: too many waiting, 409 at once
				c, err = waitOutcome(r.Context(), cfg.Store, k, fp, c, cfg.WaitInProgress)
			}
			waiting.Add(-1)
			switch {
			case errors.Is(err, ErrMismatch):
				refuse(w, r, http.StatusUnprocessableEntity, "Idempotency-Key reused with a different request", err)
				return
			case err != nil:
				opts.Report(r, slog.LevelError, "tide: idempotency claim failed; request refused", err, attrs...)
				refuse(w, r, http.StatusServiceUnavailable, "idempotency store unavailable", err)
				return
			}
		}
		switch c.State {
		case InProgress:
			w.Header().Set("Retry-After", "1")
			refuse(w, r, http.StatusConflict, "a request with this Idempotency-Key is in progress", &InProgressError{RetryAfter: c.RetryAfter})
			return
		case Completed:
			replay(w, r, opts, c, attrs)
			return
		case Recover:
			r.Header.Set(RecoveryHeader, c.PrevOwner)
			r = r.WithContext(context.WithValue(r.Context(), recoveryKey{}, c.PrevOwner))
		}
		rec := &recorder{header: http.Header{}, status: 0}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		// Record the outcome even if the client has gone: the side effect
		// happened, and a retry must replay it rather than run it again.
		fctx, cancel := cfg.Store.detach(r.Context())
		if rec.status >= 500 {
			switch err := cfg.Store.Release(fctx, k, c.Owner); {
			case errors.Is(err, ErrNotOwner), errors.Is(err, ErrNotFound):
				opts.Report(r, slog.LevelWarn, "tide: idempotency release ignored", err, append(attrs, slog.Int("status", rec.status))...)
			case err != nil:
				opts.Report(r, slog.LevelError, "tide: idempotency release failed; the record stays in progress until its lease lapses", err, append(attrs, slog.Int("status", rec.status))...)
			}
		} else {
			resp := storedResponse{Status: rec.status, Body: rec.body.Bytes()}
			for _, name := range slices.Sorted(maps.Keys(rec.header)) {
				for _, v := range rec.header[name] {
					resp.Header = append(resp.Header, [2][]byte{[]byte(name), []byte(v)})
				}
			}
			enc, _ := json.Marshal(resp)
			switch stored, err := cfg.Store.Complete(fctx, k, c.Owner, enc); {
			case errors.Is(err, ErrNotOwner), errors.Is(err, ErrNotFound):
				opts.Report(r, slog.LevelWarn, "tide: idempotency completion ignored; duplicates will not get this response", err, attrs...)
			case err != nil && !errors.Is(err, ErrFailed):
				opts.Report(r, slog.LevelError, "tide: idempotency completion failed; the record stays in progress until its lease lapses", err, attrs...)
			case err != nil || !bytes.Equal(stored, enc):
				opts.Report(r, slog.LevelWarn, "tide: idempotency completion ignored; duplicates will not get this response", ErrCompletedElsewhere, attrs...)
			}
		}
		cancel()
		h := w.Header()
		for name, vs := range rec.header {
			h[name] = vs
		}
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
	})
}

// requestTarget returns the path and the request target (path and query)
// the client sent, as r.RequestURI holds them: a router's rewrite of r.URL
// (http.StripPrefix) must not give two routes one key. A request built
// without a RequestURI (a client's, in a test) gives r.URL's.
func requestTarget(r *http.Request) (path, target string) {
	if r.RequestURI != "" {
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.Path != "" {
			return u.Path, u.RequestURI()
		}
	}
	return r.URL.Path, r.URL.RequestURI()
}

// waitOutcome claims k again, with backoff, until the claim is no longer
// in progress, wait has passed, or ctx is done; it returns the last
// claim. Each ask is a claim, so a released key is claimed (the caller
// executes) and a lapsed lease is recovered, exactly as a client's retry
// would be.
func waitOutcome(ctx context.Context, s *Store, k Key, fp []byte, c Claim, wait time.Duration) (Claim, error) {
	deadline := time.Now().Add(wait)
	pause := 10 * time.Millisecond
	for c.State == InProgress {
		left := time.Until(deadline)
		if left <= 0 {
			return c, nil
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return c, nil
		case <-t.C:
		}
		pause = min(2*pause, 250*time.Millisecond)
		next, err := s.Claim(ctx, k, fp)
		if err != nil {
			if ctx.Err() != nil {
				return c, nil // the client left: it gets the 409 nobody reads
			}
			return next, err
		}
		c = next
	}
	return c, nil
}

// replay writes a completed claim's stored response.
func replay(w http.ResponseWriter, r *http.Request, opts httpmw.Options, c Claim, attrs []slog.Attr) {
	if c.Err != nil {
		// The failure's text may carry internal detail: it is the Err, not
		// the message a client sees.
		opts.Respond(w, r, httpmw.Problem{Status: http.StatusInternalServerError, Message: "request failed", Err: c.Err})
		return
	}
	var resp storedResponse
	if err := json.Unmarshal(c.Result, &resp); err != nil || resp.Status < 100 || resp.Status > 999 {
		err = fmt.Errorf("%w: stored response (status %d): %v", store.ErrCorrupt, resp.Status, err)
		opts.Report(r, slog.LevelError, "tide: idempotency stored response cannot be replayed", err, attrs...)
		opts.Respond(w, r, httpmw.Problem{Status: http.StatusInternalServerError, Message: "corrupt stored response", Err: err})
		return
	}
	// As on the first response, a stored header replaces one of its name
	// set before (by an outer middleware), rather than following it.
	stored := http.Header{}
	for _, kv := range resp.Header {
		stored[string(kv[0])] = append(stored[string(kv[0])], string(kv[1]))
	}
	h := w.Header()
	for name, vs := range stored {
		h[name] = vs
	}
	h.Set(ReplayedHeader, "true")
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
}

// storedResponse is a response as stored: header names and values as bytes
// (base64 in JSON), so that any header bytes replay exactly.
type storedResponse struct {
	Status int         `json:"s"`
	Header [][2][]byte `json:"h,omitempty"`
	Body   []byte      `json:"b"`
}

// recorder buffers a handler's response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if status < 100 || status > 999 {
		status = http.StatusInternalServerError // net/http would panic
	}
	if status < 200 {
		return // informational (103 Early Hints): not sent, and not the final status
	}
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}
