package httpmw_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/tidekv/tide/usecases/httpmw"
)

// Example shows the two halves of Options from a middleware's side: a
// refusal answered by the configured Responder, and a bypassed store
// failure reported to the logger and the hook.
func Example() {
	opts := httpmw.Options{
		Responder: httpmw.ProblemJSON,
		Logger: slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{} // stable output
				}
				return a
			},
		})),
		OnError: func(r *http.Request, err error) { fmt.Println("hook:", r.URL.Path, err) },
	}

	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/search", nil)
	rec.Header().Set("Retry-After", "30")
	opts.Respond(rec, req, httpmw.Problem{Status: http.StatusTooManyRequests, Message: "too many requests"})
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"), rec.Body)

	opts.Report(req, slog.LevelWarn, "rate limit store failed; request allowed", errors.New("redis: connection refused"), slog.String("key", "203.0.113.7"))
	// Output:
	// 429 application/problem+json {"type":"about:blank","title":"Too Many Requests","status":429,"detail":"too many requests"}
	// level=WARN msg="rate limit store failed; request allowed" err="redis: connection refused" key=203.0.113.7
	// hook: /search redis: connection refused
}
