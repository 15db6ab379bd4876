package session_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func ExampleNewMiddleware() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	m, _ := session.New(session.Config{Backend: b})

	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		session.Login(r.Context(), "alice", "acme", map[string]string{"role": "buyer"})
	})
	mux.HandleFunc("GET /me", func(w http.ResponseWriter, r *http.Request) {
		if s := session.FromContext(r.Context()); s != nil {
			fmt.Fprint(w, s.UserID, " ", s.Auth["role"])
			return
		}
		http.Error(w, "sign in", http.StatusUnauthorized)
	})
	mw, err := session.NewMiddleware(session.HTTPConfig{Manager: m})
	if err != nil {
		panic(err)
	}
	h := mw(mux)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/login", nil))
	c := rec.Result().Cookies()[0]
	fmt.Println("cookie:", c.Name, "HttpOnly", c.HttpOnly, "Secure", c.Secure, "SameSite=Lax", c.SameSite == http.SameSiteLaxMode)

	req := httptest.NewRequest("GET", "/me", nil)
	req.AddCookie(c)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// cookie: tide_session HttpOnly true Secure true SameSite=Lax true
	// 200 alice buyer
}
