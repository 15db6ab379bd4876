package ratelimit

import (
	"errors"
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

// CostFunc returns how many units a request consumes (say, 10 for a bulk
// endpoint, or the body size in KiB, rounded up and at least 1). 0
// inspects without consuming: such a request is never refused, even when
// the quota is spent, so a client must not be able to bring its cost to 0
// (r.ContentLength/1024 is 0 for a small body, and for any body of unknown
// length, where ContentLength is -1).
type CostFunc func(r *http.Request) int64

// MiddlewareConfig configures NewMiddleware.
type MiddlewareConfig struct {
	// Limiter decides. Required.
	Limiter *Limiter
	// Key returns the request's rate-limit key (see ClientIP.Key for the
	// client's address, spoof-proof behind trusted proxies). Required.
	Key KeyFunc
	// Cost returns the request's cost. nil means 1 per request.
	Cost CostFunc
	// Options customise refusals (413, 429, 500, 503) and report store
	// failures. The zero value answers in plain text and reports nothing.
	Options httpmw.Options
}

// NewMiddleware returns a middleware that admits each request through
// cfg.Limiter under cfg.Key(r), at cfg.Cost(r), and then calls the next
// handler, or refuses it. It returns an error wrapping ErrInvalidConfig if
// cfg has no Limiter or no Key.
//
// Answers:
//
//   - admitted: the next handler runs;
//   - over the limit: 429 Too Many Requests with Retry-After (whole
//     seconds, rounded up, at least 1);
//   - a cost above the limit (it could never be admitted): 413 Content
//     Too Large; a negative cost: 500; both wrap ErrInvalidCost;
//   - the request's context ended before the decision (the client went
//     away, or a server-side deadline passed): 503, with the Problem's Err
//     the context's cause; not reported (it is not a store failure);
//   - store failed, limiter FailClosed: 503 Service Unavailable with
//     Retry-After; FailOpen: the next handler runs (but 503 if the store
//     refused the request as invalid or found the key's record corrupt,
//     see AllowN). Either way the failure
//     is reported through cfg.Options with the key (an IP address as it
//     is, any other key hashed: it may be a token).
//
// # Header fields
//
// Admitted and 429 responses carry the fields of the IETF draft
// draft-ietf-httpapi-ratelimit-headers-10 (September 2025), named by the
// limiter's Name:
//
//	RateLimit-Policy: "api";q=100;w=60
//	RateLimit: "api";r=42;t=17
//
// q is the quota (Limit; for a token bucket, Burst) and w its window in
// seconds (Period; for a token bucket, the time to refill Burst), omitted
// when it is not a whole number of seconds, which the draft cannot say. r
// is the remaining quota. t is, on a 429, the seconds until this request
// could be admitted (equal to Retry-After), and otherwise the seconds
// until the full quota is back (rounded up), so it is never earlier than
// the moment more quota is available. The partition key parameter (pk) is
// not sent: it would echo the client's key. The older RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset fields (drafts up to -06) are
// not sent. When the store fails no RateLimit fields are sent.
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
	policy := cfg.Limiter.policy()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(cfg, policy, next, w, r) })
	}, nil
}

// policy returns the RateLimit-Policy field value.
func (l *Limiter) policy() string {
	q, window := l.cfg.Limit, l.cfg.Period
	if l.cfg.Algorithm == TokenBucket {
		q, window = l.cfg.Burst, time.Duration(l.cfg.Burst)*l.interval
		if l.cfg.Burst == l.cfg.Limit {
			window = l.cfg.Period // exact, where Burst × interval may be short of it by the integer division
		}
	}
	v := strconv.Quote(l.cfg.Name) + ";q=" + strconv.FormatInt(q, 10)
	if window >= time.Second && window%time.Second == 0 {
		v += ";w=" + strconv.FormatInt(int64(window/time.Second), 10)
	}
	return v
}

func serve(cfg MiddlewareConfig, policy string, next http.Handler, w http.ResponseWriter, r *http.Request) {
	l, opts := cfg.Limiter, cfg.Options
	k, ok := cfg.Key(r)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	cost := int64(1)
	if cfg.Cost != nil {
		cost = cfg.Cost(r)
	}
	res, err := l.AllowN(r.Context(), k, cost)
	h := w.Header()
	switch {
	case errors.Is(err, ErrInvalidCost):
		status := http.StatusRequestEntityTooLarge
		if cost < 0 {
			status = http.StatusInternalServerError
			opts.Report(r, slog.LevelError, "tide: rate limit cost function returned a negative cost", err, l.logAttrs(k)...)
		}
		opts.Respond(w, r, httpmw.Problem{Status: status, Message: "request exceeds the rate limit's quota", Err: err})
		return
	case err != nil && r.Context().Err() != nil:
		// The request's context ended before the decision: the client
		// went away (it reads nothing), or a deadline set on the server
		// passed while it waits. Nothing was admitted and nothing failed;
		// an empty answer would be a 200 for a request never served.
		opts.Respond(w, r, httpmw.Problem{Status: http.StatusServiceUnavailable, Message: "request abandoned before the rate limit decided", Err: err})
		return
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
	t := ceilSeconds(res.Reset, 0)
	if !res.Allowed {
		t = ceilSeconds(res.RetryAfter, 1)
	}
	h.Set("RateLimit-Policy", policy)
	h.Set("RateLimit", strconv.Quote(l.cfg.Name)+";r="+strconv.FormatInt(max(res.Remaining, 0), 10)+";t="+strconv.FormatInt(t, 10))
	if !res.Allowed {
		h.Set("Retry-After", strconv.FormatInt(t, 10))
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
