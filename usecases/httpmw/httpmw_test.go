package httpmw_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/httpmw"
)

var errStore = errors.New("tide: store failed")

// refuse is a stand-in middleware: it sets its protocol header and lets
// the Options answer.
func refuse(o httpmw.Options, p httpmw.Problem) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/charge", nil)
	rec.Header().Set("Retry-After", "7")
	o.Respond(rec, req, p)
	return rec
}

func TestRespond(t *testing.T) {
	tooMany := httpmw.Problem{Status: http.StatusTooManyRequests, Message: "too many requests"}
	tests := []struct {
		name      string
		opts      httpmw.Options
		wantCode  int
		wantType  string
		wantBody  string
		wantExtra string // another header that must be set, "name: value"
	}{
		{"zero Options: plain text", httpmw.Options{}, 429, "text/plain; charset=utf-8", "too many requests\n", "X-Content-Type-Options: nosniff"},
		{"PlainText", httpmw.Options{Responder: httpmw.PlainText}, 429, "text/plain; charset=utf-8", "too many requests\n", ""},
		{"ProblemJSON", httpmw.Options{Responder: httpmw.ProblemJSON}, 429, "application/problem+json",
			`{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"too many requests"}`, "X-Content-Type-Options: nosniff"},
		{"ResponderFunc", httpmw.Options{Responder: httpmw.ResponderFunc(func(w http.ResponseWriter, r *http.Request, p httpmw.Problem) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(p.Status)
			fmt.Fprintf(w, "<h1>%d</h1>", p.Status)
		})}, 429, "text/html", "<h1>429</h1>", ""},
		{"Handler reads the Problem", httpmw.Options{Responder: httpmw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, ok := httpmw.ProblemFrom(r.Context())
			if !ok {
				w.WriteHeader(500)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(p.Status)
			fmt.Fprintf(w, "slow down (%s)", p.Message)
		}))}, 429, "text/plain", "slow down (too many requests)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := refuse(tt.opts, tooMany)
			if rec.Code != tt.wantCode || rec.Header().Get("Content-Type") != tt.wantType || rec.Body.String() != tt.wantBody {
				t.Errorf("got %d %q %q, want %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body, tt.wantCode, tt.wantType, tt.wantBody)
			}
			if got := rec.Header().Get("Retry-After"); got != "7" {
				t.Errorf("Retry-After = %q: the responder dropped the middleware's header", got)
			}
			if name, val, ok := strings.Cut(tt.wantExtra, ": "); ok && rec.Header().Get(name) != val {
				t.Errorf("%s = %q, want %q", name, rec.Header().Get(name), val)
			}
		})
	}
}

func TestProblemJSONIsValid(t *testing.T) {
	rec := refuse(httpmw.Options{Responder: httpmw.ProblemJSON}, httpmw.Problem{Status: 422, Message: "key reused with \"another\" body"})
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if doc["status"] != 422.0 || doc["detail"] != `key reused with "another" body` || doc["title"] != "Unprocessable Entity" {
		t.Errorf("document = %v", doc)
	}
	if got, want := rec.Header().Get("Content-Length"), fmt.Sprint(rec.Body.Len()); got != want {
		t.Errorf("Content-Length = %s, body is %s bytes", got, want)
	}
}

func TestProblemFromOutsideHandler(t *testing.T) {
	if _, ok := httpmw.ProblemFrom(httptest.NewRequest("GET", "/", nil).Context()); ok {
		t.Error("ProblemFrom found a Problem in a plain request")
	}
}

func TestReport(t *testing.T) {
	var logs bytes.Buffer
	var hooked []error
	o := httpmw.Options{
		Logger:  slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		OnError: func(r *http.Request, err error) { hooked = append(hooked, err) },
	}
	req := httptest.NewRequest("POST", "/charge", nil)
	cause := fmt.Errorf("%w: dial tcp: refused", errStore)

	o.Report(req, slog.LevelWarn, "rate limit store failed; request allowed", cause, slog.String("key", "203.0.113.7"))
	o.Report(req, slog.LevelDebug, "below the logger's level", cause)
	o.Report(req, slog.LevelError, "nil errors are not reported", nil)

	var recs []map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, m)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records logged, want 1:\n%s", len(recs), logs.String())
	}
	if r := recs[0]; r["level"] != "WARN" || r["msg"] != "rate limit store failed; request allowed" || r["key"] != "203.0.113.7" || r["err"] != cause.Error() {
		t.Errorf("record = %v", r)
	}
	if len(hooked) != 2 || !errors.Is(hooked[0], errStore) {
		t.Errorf("OnError got %v, want the two non-nil errors (the hook ignores the log level)", hooked)
	}
}

func TestReportZeroOptions(t *testing.T) {
	var o httpmw.Options
	o.Report(nil, slog.LevelError, "nothing configured", errStore) // must not panic
	o.Report(httptest.NewRequest("GET", "/", nil), slog.LevelError, "nothing configured", errStore)
}

func TestByStatus(t *testing.T) {
	m := map[int]httpmw.Responder{http.StatusTooManyRequests: httpmw.ProblemJSON, http.StatusConflict: nil}
	o := httpmw.Options{Responder: httpmw.ByStatus(m)}
	m[http.StatusServiceUnavailable] = httpmw.ProblemJSON // after construction: no effect
	tests := []struct {
		status   int
		wantType string
	}{
		{http.StatusTooManyRequests, "application/problem+json"},
		{http.StatusConflict, "text/plain; charset=utf-8"},
		{http.StatusServiceUnavailable, "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		rec := refuse(o, httpmw.Problem{Status: tt.status, Message: "m"})
		if rec.Code != tt.status || rec.Header().Get("Content-Type") != tt.wantType {
			t.Errorf("status %d: got %d %q, want %q", tt.status, rec.Code, rec.Header().Get("Content-Type"), tt.wantType)
		}
	}
}
