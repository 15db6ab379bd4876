package ratelimit

import (
	"net/http"
	"strconv"
	"time"
)

// KeyFunc extracts the rate-limit key from a request. ok = false exempts
// the request from limiting.
type KeyFunc func(r *http.Request) (key string, ok bool)

// Middleware returns an http.Handler that admits each request through l
// under key(r) and then calls next, or answers 429 Too Many Requests.
//
// Every limited response carries the IETF RateLimit header fields:
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (whole seconds,
// rounded up); a 429 also carries Retry-After (whole seconds, rounded up,
// at least 1). When the store fails and the limiter fails closed, the
// answer is 503 Service Unavailable with Retry-After; when it fails open,
// the request proceeds without RateLimit headers.
func Middleware(l *Limiter, key KeyFunc, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l == nil || key == nil {
			http.Error(w, "rate limiter not configured", http.StatusInternalServerError)
			return
		}
		k, ok := key(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		res, err := l.Allow(r.Context(), k)
		h := w.Header()
		if err != nil {
			if res.Allowed {
				next.ServeHTTP(w, r)
				return
			}
			h.Set("Retry-After", strconv.FormatInt(ceilSeconds(res.RetryAfter, 1), 10))
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		h.Set("RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
		h.Set("RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
		h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(res.Reset, 0), 10))
		if !res.Allowed {
			h.Set("Retry-After", strconv.FormatInt(ceilSeconds(res.RetryAfter, 1), 10))
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ceilSeconds rounds d up to whole seconds, at least floor.
func ceilSeconds(d time.Duration, floor int64) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, floor)
}
