package ratelimit

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/tidekv/tide/usecases/httpmw"
)

// KeyFunc extracts the rate-limit key from a request. ok = false exempts
// the request from limiting. ClientIP.Key is one.
type KeyFunc func(r *http.Request) (key string, ok bool)

// MiddlewareConfig configures NewMiddleware.
type MiddlewareConfig struct {
	// Limiter decides. Required.
	Limiter *Limiter
	// Key returns the request's rate-limit key (see ClientIP.Key for the
	// client's address, spoof-proof behind trusted proxies). Required.
	Key KeyFunc
	// Options customise refusals (429, 503) and report store failures.
	// The zero value answers in plain text and reports nothing.
	Options httpmw.Options
}

// NewMiddleware returns a middleware that admits each request through
// cfg.Limiter under cfg.Key(r) and then calls the next handler, or
// refuses it. It returns an error wrapping ErrInvalidConfig if cfg has no
// Limiter or no Key.
//
// Answers:
//
//   - admitted: the next handler runs;
//   - over the limit: 429 Too Many Requests with Retry-After (whole
//     seconds, rounded up, at least 1);
//   - store failed, limiter FailClosed: 503 Service Unavailable with
//     Retry-After; FailOpen: the next handler runs. Either way the failure
//     is reported through cfg.Options with the key (an IP address as it
//     is, any other key hashed: it may be a token).
//
// Refusals are written by cfg.Options' Responder with a httpmw.Problem
// whose Err is nil for 429 and wraps ErrStore for 503.
func NewMiddleware(cfg MiddlewareConfig) (func(http.Handler) http.Handler, error) {
	switch {
	case cfg.Limiter == nil:
		return nil, fmt.Errorf("%w: MiddlewareConfig.Limiter is nil", ErrInvalidConfig)
	case cfg.Key == nil:
		return nil, fmt.Errorf("%w: MiddlewareConfig.Key is nil", ErrInvalidConfig)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(cfg, next, w, r) })
	}, nil
}

func serve(cfg MiddlewareConfig, next http.Handler, w http.ResponseWriter, r *http.Request) {
	l, opts := cfg.Limiter, cfg.Options
	k, ok := cfg.Key(r)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	res, err := l.Allow(r.Context(), k)
	h := w.Header()
	switch {
	case err != nil && res.Allowed:
		opts.Report(r, slog.LevelWarn, "tide: rate limit store failed; request allowed (fail open)", err, l.logAttrs(k)...)
		next.ServeHTTP(w, r)
		return
	case err != nil:
		opts.Report(r, slog.LevelError, "tide: rate limit store failed; request refused (fail closed)", err, l.logAttrs(k)...)
		h.Set("Retry-After", strconv.FormatInt(ceilSeconds(res.RetryAfter, 1), 10))
		opts.Respond(w, r, httpmw.Problem{Status: http.StatusServiceUnavailable, Message: "rate limiter unavailable", Err: err})
		return
	}
	h.Set("RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
	h.Set("RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
	h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(res.Reset, 0), 10))
	if !res.Allowed {
		h.Set("Retry-After", strconv.FormatInt(ceilSeconds(res.RetryAfter, 1), 10))
		opts.Respond(w, r, httpmw.Problem{Status: http.StatusTooManyRequests, Message: "too many requests"})
		return
	}
	next.ServeHTTP(w, r)
}

// ceilSeconds rounds d up to whole seconds, at least floor.
func ceilSeconds(d time.Duration, floor int64) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, floor)
}
