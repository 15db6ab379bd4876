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
	// cookie: __Host-tide_session HttpOnly true Secure true SameSite=Lax true
	// 200 alice buyer
}

// A visitor fills a cart before signing in; Login keeps the cart under a
// new session ID and revokes the old one (session fixation); a flash
// message is shown once.
func ExampleLogin() {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, _ := engine.New(engine.Config{Clock: clk})
	defer e.Close()
	b, _ := embedded.New(embedded.Config{Engine: e, Clock: clk})
	m, _ := session.New(session.Config{Backend: b})
	mw, _ := session.NewMiddleware(session.HTTPConfig{Manager: m})

	mux := http.NewServeMux()
	mux.HandleFunc("POST /cart", func(w http.ResponseWriter, r *http.Request) {
		s, err := session.Start(r.Context()) // an anonymous session, if none
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		n, _ := s.GetInt("items")
		s.SetInt("items", n+1)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		// (check the password first)
		if _, err := session.Login(r.Context(), "alice", "", nil); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		session.RememberMe(r.Context(), r.FormValue("remember") == "on")
		session.FromContext(r.Context()).SetString("flash", "welcome back")
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s := session.FromContext(r.Context())
		if s == nil {
			fmt.Fprint(w, "anonymous")
			return
		}
		flash, _ := s.PopString("flash")
		n, _ := s.GetInt("items")
		fmt.Fprintf(w, "user=%q items=%d flash=%q", s.UserID, n, flash)
	})
	h := mw(mux)
	do := func(method, path, cookie string) (string, *http.Cookie) {
		req := httptest.NewRequest(method, path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "__Host-tide_session", Value: cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		for _, c := range rec.Result().Cookies() {
			return rec.Body.String(), c
		}
		return rec.Body.String(), nil
	}

	_, visitor := do("POST", "/cart", "")
	do("POST", "/cart", visitor.Value)
	_, user := do("POST", "/login?remember=on", visitor.Value)
	fmt.Println("new ID:", user.Value != visitor.Value, "Max-Age:", user.MaxAge)
	body, _ := do("GET", "/", user.Value)
	fmt.Println(body)
	body, _ = do("GET", "/", user.Value)
	fmt.Println(body)
	body, _ = do("GET", "/", visitor.Value)
	fmt.Println("pre-login ID:", body)
	// Output:
	// new ID: true Max-Age: 86400
	// user="alice" items=2 flash="welcome back"
	// user="alice" items=2 flash=""
	// pre-login ID: anonymous
}
