// Package httpmw holds what tide's HTTP middlewares (rate limit,
// idempotency, sessions) are to share: how they answer a request they
// refuse, and how they report the failures a response cannot tell the
// client about. Options is the setting each middleware takes (rate limit
// and idempotency do, through their MiddlewareConfig); its zero value
// answers in plain text and logs nothing.
//
// Every tide middleware has one shape: a constructor that validates its
// configuration and returns a func(http.Handler) http.Handler, which
// chains with the standard mux, chi and alice.
//
// # Responses
//
// A middleware that refuses a request describes the refusal as a Problem
// (status, a one-line message, the cause) and hands it to
// Options.Responder. It sets its protocol headers (Retry-After,
// RateLimit-*) before, so a Responder only writes the body. PlainText (the
// default) and ProblemJSON (RFC 9457) are provided; Handler adapts any
// http.Handler, which finds the Problem in the request's context with
// ProblemFrom; ByStatus picks one per status (say, an HTML page for 429)
// and leaves the others plain.
//
// # Reports
//
// A failure that does not become a response, or that a client must not
// see in detail — a store that failed and was bypassed (fail open), a
// completion that could not be recorded, a response that could not be
// replayed — goes to Options.Report: logged at the given level on
// Options.Logger (nil: not logged) and passed to Options.OnError (nil: not
// called), with the request and the adapter's key. Middlewares never log
// secrets: no session ID, cookie or token is ever an attribute.
package httpmw

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
)

// Problem is an error response a middleware is about to send.
type Problem struct {
	// Status is the HTTP status: 400, 409, 413, 422, 429, 500 or 503.
	Status int
	// Message is a one-line description safe to show the client (no
	// internal detail); PlainText sends it as the body.
	Message string
	// Err is the cause, matching the adapter's sentinel errors with
	// errors.Is (for example ratelimit.ErrStore), or nil when the refusal
	// is the adapter working as intended (a request over its limit). It
	// may carry internal detail: do not send Err.Error() to clients.
	Err error
}

// A Responder writes the response for a Problem: status and body. The
// middleware has already set any protocol headers. A Responder must be
// safe for concurrent use.
type Responder interface {
	Respond(w http.ResponseWriter, r *http.Request, p Problem)
}

// ResponderFunc adapts a function to a Responder.
type ResponderFunc func(w http.ResponseWriter, r *http.Request, p Problem)

// Respond calls f(w, r, p).
func (f ResponderFunc) Respond(w http.ResponseWriter, r *http.Request, p Problem) { f(w, r, p) }

// PlainText answers with http.Error: the status and the message as a
// text/plain body.
var PlainText Responder = ResponderFunc(func(w http.ResponseWriter, r *http.Request, p Problem) {
	http.Error(w, p.Message, p.Status)
})

// ProblemJSON answers with an RFC 9457 problem document:
//
//	{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"too many requests"}
var ProblemJSON Responder = ResponderFunc(func(w http.ResponseWriter, r *http.Request, p Problem) {
	body, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail,omitempty"`
	}{"about:blank", http.StatusText(p.Status), p.Status, p.Message})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(p.Status)
	w.Write(body)
})

// ByStatus returns a Responder that answers a Problem with m's Responder
// for its status, and with PlainText for any other status. m is copied.
func ByStatus(m map[int]Responder) Responder {
	c := make(map[int]Responder, len(m))
	for status, r := range m {
		if r != nil {
			c[status] = r
		}
	}
	return ResponderFunc(func(w http.ResponseWriter, r *http.Request, p Problem) {
		if x, ok := c[p.Status]; ok {
			x.Respond(w, r, p)
			return
		}
		PlainText.Respond(w, r, p)
	})
}

type problemKey struct{}

// Handler returns a Responder that serves h with the Problem in the
// request's context (see ProblemFrom). h writes the status itself, so one
// handler can render every status, or a mux can route by it.
func Handler(h http.Handler) Responder {
	return ResponderFunc(func(w http.ResponseWriter, r *http.Request, p Problem) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), problemKey{}, p)))
	})
}

// ProblemFrom returns the Problem a Handler responder is serving.
func ProblemFrom(ctx context.Context) (Problem, bool) {
	p, ok := ctx.Value(problemKey{}).(Problem)
	return p, ok
}

// Options are the response and reporting settings every tide middleware
// takes. The zero value answers in PlainText and reports nothing.
type Options struct {
	// Responder writes refusals; nil means PlainText.
	Responder Responder
	// Logger receives a record for every reported failure; nil means
	// none.
	Logger *slog.Logger
	// OnError, if set, is called with every reported failure, on the
	// request's goroutine, after it is logged (for metrics or tracing). It
	// must be safe for concurrent use and should not block.
	OnError func(r *http.Request, err error)
}

// Respond writes p through o.Responder, or as PlainText.
func (o Options) Respond(w http.ResponseWriter, r *http.Request, p Problem) {
	if o.Responder == nil {
		PlainText.Respond(w, r, p)
		return
	}
	o.Responder.Respond(w, r, p)
}

// Report reports err, a failure met while serving r: it logs msg at level
// with the attributes "err", then attrs (a middleware passes the
// adapter's key here), and then calls OnError. A nil err is not reported.
func (o Options) Report(r *http.Request, level slog.Level, msg string, err error, attrs ...slog.Attr) {
	if err == nil {
		return
	}
	if o.Logger != nil {
		ctx := context.Background()
		if r != nil {
			ctx = r.Context()
		}
		if o.Logger.Enabled(ctx, level) {
			all := make([]slog.Attr, 0, 1+len(attrs))
			all = append(all, slog.Any("err", err))
			o.Logger.LogAttrs(ctx, level, msg, append(all, attrs...)...)
		}
	}
	if o.OnError != nil {
		o.OnError(r, err)
	}
}
