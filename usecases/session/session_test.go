package session_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunSession(t, storetest.Embedded)
}

func TestNewRejects(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for i, c := range []session.Config{
		{},
		{Backend: b, IdleTimeout: -1},
		{Backend: b, IdleTimeout: time.Hour, AbsoluteTimeout: time.Minute},
		{Backend: b, IdleTimeout: time.Minute, TouchInterval: time.Hour},
	} {
		if _, err := session.New(c); !errors.Is(err, session.ErrInvalidConfig) {
			t.Errorf("case %d: got %v, want ErrInvalidConfig", i, err)
		}
	}
}

func TestMiddleware(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, _ := session.New(session.Config{Backend: b})
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		if _, err := session.Login(r.Context(), r.URL.Query().Get("user"), "", nil); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprint(w, "welcome")
	})
	mux.HandleFunc("/visit", func(w http.ResponseWriter, r *http.Request) {
		s := session.FromContext(r.Context())
		if s == nil {
			http.Error(w, "anonymous", http.StatusUnauthorized)
			return
		}
		n, _ := s.Get("visits")
		session.SetValue(r.Context(), "visits", append(n, '+'))
		fmt.Fprintf(w, "%s %s", s.UserID, n)
	})
	mux.HandleFunc("/sudo", func(w http.ResponseWriter, r *http.Request) {
		if err := session.RotateID(r.Context()); err != nil {
			http.Error(w, err.Error(), 500)
		}
	})
	mux.HandleFunc("/logout", func(w http.ResponseWriter, r *http.Request) { session.Logout(r.Context()) })
	mw, err := session.NewMiddleware(session.HTTPConfig{Manager: m})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(mux)

	var cookie *http.Cookie
	do := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		for _, c := range rec.Result().Cookies() {
			if c.MaxAge < 0 {
				cookie = nil
			} else {
				cookie = c
			}
		}
		return rec
	}
	if rec := do("/visit"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("anonymous visit: got %d, want 401", rec.Code)
	}
	rec := do("/login?user=alice")
	c := rec.Result().Cookies()
	if len(c) != 1 || !c[0].Secure || !c[0].HttpOnly || c[0].SameSite != http.SameSiteLaxMode || c[0].Name != "__Host-tide_session" {
		t.Fatalf("login cookie: got %+v, want one Secure HttpOnly SameSite=Lax __Host-tide_session cookie", c)
	}
	steps := []struct{ path, want string }{
		{"/visit", "alice "},
		{"/visit", "alice +"},
		{"/sudo", ""},
		{"/visit", "alice ++"},
	}
	for i, s := range steps {
		before := cookie.Value
		rec := do(s.path)
		if rec.Body.String() != s.want {
			t.Errorf("step %d %s: got %q, want %q", i, s.path, rec.Body.String(), s.want)
		}
		if s.path == "/sudo" && cookie.Value == before {
			t.Errorf("RotateID did not change the cookie")
		}
	}
	old := *cookie
	do("/logout")
	if cookie != nil {
		t.Fatal("logout did not clear the cookie")
	}
	cookie = &old
	if rec := do("/visit"); rec.Code != http.StatusUnauthorized {
		t.Fatalf("visit with a revoked cookie: got %d, want 401", rec.Code)
	}
}
