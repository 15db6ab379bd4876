package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/expvarstats"
	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// shop is a small web app on the session middleware: a visitor's cart,
// flash messages, login with "remember me", privilege elevation, logout.
type shop struct {
	t   *testing.T
	m   *session.Manager
	clk *clock.Manual
	h   http.Handler
}

func newShop(t *testing.T, b session.Backend, clk *clock.Manual, cfg session.HTTPConfig) *shop {
	t.Helper()
	m, err := session.New(session.Config{Backend: b, IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 30 * 24 * time.Hour,
		RememberIdleTimeout: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Manager = m
	mw, err := session.NewMiddleware(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cart", func(w http.ResponseWriter, r *http.Request) {
		s, err := session.Start(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		n, _ := s.GetInt("items")
		s.SetInt("items", n+1)
		s.SetString("flash", "added to cart")
	})
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, r *http.Request) {
		s := session.FromContext(r.Context())
		if s == nil {
			fmt.Fprint(w, "anonymous")
			return
		}
		flash, _ := s.PopString("flash")
		n, _ := s.GetInt("items")
		fmt.Fprintf(w, "user=%s items=%d flash=%s", s.UserID, n, flash)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Cache-Control") != "" {
			w.Header().Set("Cache-Control", r.Header.Get("X-Cache-Control"))
		}
		if _, err := session.Login(r.Context(), r.URL.Query().Get("user"), "", nil); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if r.URL.Query().Get("remember") == "1" {
			if err := session.RememberMe(r.Context(), true); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		}
	})
	mux.HandleFunc("POST /sudo", func(w http.ResponseWriter, r *http.Request) {
		if err := session.RotateID(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		if err := session.Logout(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return &shop{t: t, m: m, clk: clk, h: mw(mux)}
}

// do sends a request with cookie (if non-empty) and returns the response
// and the session cookie it set, if any.
func (s *shop) do(method, path, cookie string, header ...string) (*httptest.ResponseRecorder, *http.Cookie) {
	req := httptest.NewRequest(method, path, nil)
	if cookie != "" {
		req.Header.Set("Cookie", "tide_session="+cookie)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Name == "tide_session" {
			return rec, c
		}
	}
	return rec, nil
}

func newTestShop(t *testing.T) *shop {
	b, clk := storetest.NewEmbedded(t)
	return newShop(t, b, clk, session.HTTPConfig{Insecure: true})
}

func TestAnonymousCartSurvivesLoginAndOldIDIsRevoked(t *testing.T) {
	s := newTestShop(t)
	if rec, c := s.do("GET", "/page", ""); rec.Body.String() != "anonymous" || c != nil {
		t.Fatalf("first visit: got %q, cookie %v; want anonymous and no cookie (no session until one is needed)", rec.Body.String(), c)
	}
	_, anon := s.do("POST", "/cart", "")
	if anon == nil {
		t.Fatal("Start set no cookie")
	}
	if _, c := s.do("POST", "/cart", anon.Value); c != nil {
		t.Errorf("second add to cart set the cookie again (%v): Start must reuse the session", c)
	}
	if rec, _ := s.do("GET", "/page", anon.Value); rec.Body.String() != "user= items=2 flash=added to cart" {
		t.Fatalf("anonymous page: got %q", rec.Body.String())
	}
	rec, login := s.do("POST", "/login?user=alice", anon.Value)
	if rec.Code != http.StatusOK || login == nil || login.Value == anon.Value {
		t.Fatalf("login: got %d, cookie %v; want a new session ID", rec.Code, login)
	}
	if rec, _ := s.do("GET", "/page", login.Value); rec.Body.String() != "user=alice items=2 flash=" {
		t.Errorf("after login: got %q, want alice with the visitor's cart (the flash was already shown)", rec.Body.String())
	}
	// Session fixation: whoever knew the anonymous ID must not ride the
	// signed-in session.
	if rec, _ := s.do("GET", "/page", anon.Value); rec.Body.String() != "anonymous" {
		t.Errorf("the pre-login ID after login: got %q, want no session", rec.Body.String())
	}
	if _, ok, err := s.m.Load(context.Background(), anon.Value); ok || err != nil {
		t.Errorf("Load(pre-login ID): got (%v, %v), want a miss", ok, err)
	}
}

func TestLoginOverAnotherUsersSessionCarriesNothing(t *testing.T) {
	s := newTestShop(t)
	_, bob := s.do("POST", "/login?user=bob", "")
	_, anon := s.do("POST", "/cart", bob.Value) // bob's cart
	if anon != nil {
		t.Fatal("Start replaced bob's session")
	}
	_, alice := s.do("POST", "/login?user=alice", bob.Value)
	if rec, _ := s.do("GET", "/page", alice.Value); rec.Body.String() != "user=alice items=0 flash=" {
		t.Errorf("alice signing in on bob's browser: got %q, want none of bob's values", rec.Body.String())
	}
	if rec, _ := s.do("GET", "/page", bob.Value); rec.Body.String() != "anonymous" {
		t.Errorf("bob's ID after alice's login: got %q, want revoked", rec.Body.String())
	}
}

func TestFlashIsShownOnce(t *testing.T) {
	s := newTestShop(t)
	_, c := s.do("POST", "/cart", "")
	want := []string{"user= items=1 flash=added to cart", "user= items=1 flash=", "user= items=1 flash="}
	for i, w := range want {
		if rec, _ := s.do("GET", "/page", c.Value); rec.Body.String() != w {
			t.Errorf("view %d: got %q, want %q", i, rec.Body.String(), w)
		}
	}
}

func TestForgedSessionIDIsNeverAdopted(t *testing.T) {
	s := newTestShop(t)
	forged := strings.Repeat("A", 43) // the form of an ID, naming no session
	rec, c := s.do("POST", "/cart", forged)
	if rec.Code != http.StatusOK || c == nil || c.Value == forged {
		t.Fatalf("Start with a forged cookie: got %d, cookie %v; want a fresh ID", rec.Code, c)
	}
	if _, ok, _ := s.m.Load(context.Background(), forged); ok {
		t.Fatal("the forged ID names a session")
	}
	// An attacker who plants a real anonymous session of theirs gains
	// nothing at the victim's login.
	_, planted := s.do("POST", "/cart", "")
	_, victim := s.do("POST", "/login?user=victim", planted.Value)
	if victim == nil || victim.Value == planted.Value {
		t.Fatalf("login kept the planted ID")
	}
	if rec, _ := s.do("GET", "/page", planted.Value); rec.Body.String() != "anonymous" {
		t.Errorf("the planted ID after the victim's login: got %q, want no session", rec.Body.String())
	}
}

func TestRotateIDRevokesTheOldID(t *testing.T) {
	s := newTestShop(t)
	_, before := s.do("POST", "/login?user=alice", "")
	_, after := s.do("POST", "/sudo", before.Value)
	if after == nil || after.Value == before.Value {
		t.Fatalf("RotateID: cookie %v, want a new ID", after)
	}
	if rec, _ := s.do("GET", "/page", before.Value); rec.Body.String() != "anonymous" {
		t.Errorf("the old ID after RotateID: got %q, want no session", rec.Body.String())
	}
	if rec, _ := s.do("GET", "/page", after.Value); !strings.HasPrefix(rec.Body.String(), "user=alice") {
		t.Errorf("the new ID after RotateID: got %q, want alice", rec.Body.String())
	}
}

func TestAttackerChosenCookiesLoadNothing(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	var reports []error
	s := newShop(t, b, clk, session.HTTPConfig{Insecure: true, Options: httpmw.Options{OnError: func(_ *http.Request, err error) { reports = append(reports, err) }}})
	ctx := context.Background()
	_, alice := s.do("POST", "/login?user=alice", "")
	infos, err := s.m.List(ctx, "alice")
	if err != nil || len(infos) != 1 {
		t.Fatalf("List(alice): got %v, %v", infos, err)
	}
	cookies := map[string]string{
		"session handle (the store key's hash)": infos[0].Handle,
		"user index key":                        "user:" + infos[0].Handle,
		"index key suffix of the ID's length":   "user:" + strings.Repeat("a", 38),
		"oversized":                             strings.Repeat("A", 64<<10),
		"oversized ID prefix":                   alice.Value + strings.Repeat("A", 4096),
		"not base64url":                         strings.Repeat("*", 43),
		"padded base64":                         alice.Value[:40] + "==",
		"empty":                                 "",
	}
	for name, c := range cookies {
		req := httptest.NewRequest("GET", "/page", nil)
		req.Header.Set("Cookie", "tide_session="+c)
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, req)
		if rec.Body.String() != "anonymous" {
			t.Errorf("%s: got %q, want no session", name, rec.Body.String())
		}
	}
	if len(reports) != 0 {
		t.Errorf("attacker cookies were reported as store failures: %v", reports)
	}
	if rec, _ := s.do("GET", "/page", alice.Value); !strings.HasPrefix(rec.Body.String(), "user=alice") {
		t.Errorf("alice after the attack: got %q", rec.Body.String())
	}
	if infos, err := s.m.List(ctx, "alice"); err != nil || len(infos) != 1 {
		t.Errorf("alice's index after the attack: got %v, %v; want her one session", infos, err)
	}
}

func TestRememberMeSetsPersistentCookieAndLongerIdle(t *testing.T) {
	s := newTestShop(t)
	_, plain := s.do("POST", "/login?user=alice", "")
	_, kept := s.do("POST", "/login?user=bob&remember=1", "")
	if plain.MaxAge != 0 {
		t.Errorf("a plain session's cookie has Max-Age %d, want a browser-session cookie", plain.MaxAge)
	}
	if want := int((30 * 24 * time.Hour).Seconds()); kept.MaxAge != want {
		t.Errorf("a remembered session's cookie: Max-Age %d, want %d (its absolute deadline)", kept.MaxAge, want)
	}
	s.clk.Advance(2 * time.Hour) // past IdleTimeout, within RememberIdleTimeout
	if rec, _ := s.do("GET", "/page", plain.Value); rec.Body.String() != "anonymous" {
		t.Errorf("plain session after 2h idle: got %q, want expired", rec.Body.String())
	}
	rec, again := s.do("GET", "/page", kept.Value)
	if !strings.HasPrefix(rec.Body.String(), "user=bob") {
		t.Errorf("remembered session after 2h idle: got %q, want bob", rec.Body.String())
	}
	if again != nil {
		t.Errorf("a plain request set the cookie again: %v", again)
	}
	// A remembered anonymous visitor stays remembered when signing in.
	_, anon := s.do("POST", "/cart", "")
	sess, _, _ := s.m.Load(context.Background(), anon.Value)
	sess.Remember = true
	if err := s.m.Save(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	if _, c := s.do("POST", "/login?user=carol", anon.Value); c == nil || c.MaxAge <= 0 {
		t.Errorf("login from a remembered anonymous session: cookie %v, want a persistent one", c)
	}
}

func TestCookieResponsesAreNotCachedByProxies(t *testing.T) {
	s := newTestShop(t)
	cases := []struct {
		name, method, path, reqCC string
		wantCookie                bool
		wantCC                    string
	}{
		{"page without a session", "GET", "/page", "", false, ""},
		{"Start sets the cookie", "POST", "/cart", "", true, `no-cache="Set-Cookie"`},
		{"login after the handler's own Cache-Control", "POST", "/login?user=a", "private, max-age=60", true, `private, max-age=60, no-cache="Set-Cookie"`},
		{"logout clears the cookie", "POST", "/logout", "", true, `no-cache="Set-Cookie"`},
	}
	for _, c := range cases {
		rec, cookie := s.do(c.method, c.path, "", "X-Cache-Control", c.reqCC)
		h := rec.Result().Header
		if got := h.Values("Vary"); len(got) != 1 || got[0] != "Cookie" {
			t.Errorf("%s: Vary %q, want [Cookie]", c.name, got)
		}
		if (cookie != nil) != c.wantCookie || h.Get("Cache-Control") != c.wantCC {
			t.Errorf("%s: cookie %v, Cache-Control %q; want cookie %v, %q", c.name, cookie, h.Get("Cache-Control"), c.wantCookie, c.wantCC)
		}
	}
}

// TestConcurrentRequestsOfOneSessionLoseNoChanges runs requests of one
// session that all load it before any saves (two tabs, a burst of XHRs):
// every request's change must survive, not only the first saver's.
func TestConcurrentRequestsOfOneSessionLoseNoChanges(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, _ := session.New(session.Config{Backend: b})
	var reports []error
	var mu sync.Mutex
	mw, err := session.NewMiddleware(session.HTTPConfig{Manager: m, Options: httpmw.Options{OnError: func(_ *http.Request, err error) {
		mu.Lock()
		reports = append(reports, err)
		mu.Unlock()
	}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var loaded sync.WaitGroup
	loaded.Add(n)
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loaded.Done()
		loaded.Wait() // every request has loaded the same version
		s := session.FromContext(r.Context())
		s.SetString("tab-"+r.URL.Query().Get("tab"), "seen")
		s.Delete("stale")
	}))
	ctx := context.Background()
	s, _ := m.Create(ctx, "alice", "", nil)
	s.SetString("stale", "x")
	s.SetString("kept", "y")
	if err := m.Save(ctx, s); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest("GET", fmt.Sprintf("/?tab=%d", i), nil)
			req.AddCookie(&http.Cookie{Name: "__Host-tide_session", Value: s.ID})
			h.ServeHTTP(httptest.NewRecorder(), req)
		}()
	}
	wg.Wait()
	got, ok, err := m.Load(ctx, s.ID)
	if !ok || err != nil {
		t.Fatalf("Load: %v %v", ok, err)
	}
	for i := range n {
		if v, _ := got.GetString(fmt.Sprintf("tab-%d", i)); v != "seen" {
			t.Errorf("request %d's change was lost", i)
		}
	}
	if _, ok := got.Get("stale"); ok {
		t.Error("a deleted value came back")
	}
	if v, _ := got.GetString("kept"); v != "y" {
		t.Errorf("an untouched value: got %q, want it kept", v)
	}
	if len(reports) != 0 {
		t.Errorf("reported: %v", reports)
	}
}

func TestStoreFailureIsReportedWithoutTheSessionID(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	var logs bytes.Buffer
	var hooked []error
	opts := httpmw.Options{
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
		OnError: func(_ *http.Request, err error) { hooked = append(hooked, err) },
		Responder: httpmw.ResponderFunc(func(w http.ResponseWriter, r *http.Request, p httpmw.Problem) {
			http.Error(w, "custom: "+p.Message, p.Status)
		}),
	}
	open := newShop(t, flaky, clk, session.HTTPConfig{Insecure: true, Options: opts})
	_, alice := open.do("POST", "/login?user=alice", "")
	flaky.Down.Store(true)

	// Default: the request proceeds without a session, and Start does not
	// replace the cookie of a session that may be live.
	if rec, _ := open.do("GET", "/page", alice.Value); rec.Body.String() != "anonymous" {
		t.Errorf("page with the store down: got %q, want it served without a session", rec.Body.String())
	}
	if rec, c := open.do("POST", "/cart", alice.Value); rec.Code != http.StatusServiceUnavailable || c != nil {
		t.Errorf("Start with the store down: got %d, cookie %v; want an error and the cookie kept", rec.Code, c)
	}
	refuse := newShop(t, flaky, clk, session.HTTPConfig{Insecure: true, RefuseOnLoadError: true, Options: opts})
	if rec, _ := refuse.do("GET", "/page", alice.Value); rec.Code != http.StatusServiceUnavailable || rec.Body.String() != "custom: session store unavailable\n" {
		t.Errorf("RefuseOnLoadError: got %d %q, want 503 from the Responder", rec.Code, rec.Body.String())
	}
	if len(hooked) != 3 || !errors.Is(hooked[0], store.ErrUnavailable) {
		t.Errorf("OnError: got %v, want three store.ErrUnavailable", hooked)
	}
	out := logs.String()
	if !strings.Contains(out, "injected failure") || !strings.Contains(out, "op=load") {
		t.Errorf("log lacks the cause: %s", out)
	}
	if strings.Contains(out, alice.Value) {
		t.Errorf("log holds the session ID: %s", out)
	}

	// A save that fails after the handler is reported too.
	flaky.Down.Store(false)
	h, _ := session.NewMiddleware(session.HTTPConfig{Manager: open.m, Insecure: true, Options: opts})
	logs.Reset()
	srv := h(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session.SetValue(r.Context(), "x", []byte("y"))
		flaky.Down.Store(true)
	}))
	req := httptest.NewRequest("GET", "/", nil)
	req.AddCookie(alice)
	srv.ServeHTTP(httptest.NewRecorder(), req)
	if out := logs.String(); !strings.Contains(out, "op=save") || strings.Contains(out, alice.Value) {
		t.Errorf("failed save: log %q, want it reported without the ID", out)
	}
}

func TestNewMiddlewareRejects(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, _ := session.New(session.Config{Backend: b})
	for name, c := range map[string]session.HTTPConfig{
		"no manager":                 {},
		"cookie name with spaces":    {Manager: m, CookieName: "my session"},
		"cookie name with ;":         {Manager: m, CookieName: "a;b"},
		"path with ;":                {Manager: m, Path: "/a;b"},
		"SameSite=None, insecure":    {Manager: m, SameSite: http.SameSiteNoneMode, Insecure: true},
		"unknown SameSite":           {Manager: m, SameSite: 99},
		"__Host- cookie, insecure":   {Manager: m, CookieName: "__Host-s", Insecure: true},
		"__Host- cookie, Domain":     {Manager: m, CookieName: "__Host-s", Domain: "example.com"},
		"__Host- cookie, Path":       {Manager: m, CookieName: "__Host-s", Path: "/app"},
		"__Secure- cookie, insecure": {Manager: m, CookieName: "__Secure-s", Insecure: true},
	} {
		if _, err := session.NewMiddleware(c); !errors.Is(err, session.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestContextHelpersWithoutMiddleware(t *testing.T) {
	ctx := context.Background()
	if _, err := session.Start(ctx); !errors.Is(err, session.ErrNoMiddleware) {
		t.Errorf("Start: got %v", err)
	}
	if _, err := session.Login(ctx, "a", "", nil); !errors.Is(err, session.ErrNoMiddleware) {
		t.Errorf("Login: got %v", err)
	}
	if err := session.Logout(ctx); !errors.Is(err, session.ErrNoMiddleware) {
		t.Errorf("Logout: got %v", err)
	}
}

func TestTypedValues(t *testing.T) {
	var s session.Session
	at := time.Date(2026, 3, 1, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
	s.SetString("s", "héllo")
	s.SetInt("i", math.MinInt)
	s.SetInt("j", math.MaxInt)
	s.SetBool("b", true)
	s.SetTime("t", at)
	s.SetTime("far", time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)) // beyond RFC 3339
	s.Set("junk", []byte("x"))

	if v, ok := s.GetString("s"); v != "héllo" || !ok {
		t.Errorf("GetString: %q %v", v, ok)
	}
	if v, ok := s.GetInt("i"); v != math.MinInt || !ok {
		t.Errorf("GetInt(MinInt): %d %v", v, ok)
	}
	if v, ok := s.GetInt("j"); v != math.MaxInt || !ok {
		t.Errorf("GetInt(MaxInt): %d %v", v, ok)
	}
	if v, ok := s.GetBool("b"); !v || !ok {
		t.Errorf("GetBool: %v %v", v, ok)
	}
	if v, ok := s.GetTime("t"); !v.Equal(at) || !ok {
		t.Errorf("GetTime: %v %v, want %v", v, ok, at)
	}
	misses := []struct {
		name string
		get  func() bool
	}{
		{"GetInt(missing)", func() bool { _, ok := s.GetInt("none"); return ok }},
		{"GetInt(junk)", func() bool { _, ok := s.GetInt("junk"); return ok }},
		{"GetBool(junk)", func() bool { _, ok := s.GetBool("junk"); return ok }},
		{"GetTime(junk)", func() bool { _, ok := s.GetTime("junk"); return ok }},
		{"GetTime(year 12000)", func() bool { _, ok := s.GetTime("far"); return ok }},
		{"GetString(missing)", func() bool { _, ok := s.GetString("none"); return ok }},
	}
	for _, c := range misses {
		if c.get() {
			t.Errorf("%s: ok, want false", c.name)
		}
	}
	if v, ok := s.PopString("s"); v != "héllo" || !ok {
		t.Errorf("PopString: %q %v", v, ok)
	}
	if _, ok := s.PopString("s"); ok {
		t.Error("PopString twice: the value is still there")
	}
}

func TestEventsCount(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, _ := session.New(session.Config{Backend: b})
	ctx := context.Background()
	a, _ := m.CreateAnonymous(ctx)
	u, _ := m.Login(ctx, a, "alice", "", nil) // created, revoked
	m.Rotate(ctx, u)
	m.Create(ctx, "alice", "", nil)
	m.DestroyAll(ctx, "alice") // revoked ×2
	got := map[string]uint64{}
	for k, v := range m.Events() {
		got[k] = v
	}
	want := map[string]uint64{"created": 3, "revoked": 3, "rotated": 1, "evicted": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Events: got %v, want %v", got, want)
	}
}

// A Manager is read by expvarstats and contrib/prometheus as an EventSource.
var _ expvarstats.EventSource = (*session.Manager)(nil)

// TestDefaultCookieNameCannotBeTossed: a sibling subdomain can set a cookie
// for the parent domain (cookie tossing) under any name but one starting
// with __Host-, which browsers accept only Secure, with Path=/ and no
// Domain. So the default name has that prefix wherever its attributes
// allow it, and falls back to "tide_session" where they do not.
func TestDefaultCookieNameCannotBeTossed(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, _ := session.New(session.Config{Backend: b})
	for _, c := range []struct {
		name string
		cfg  session.HTTPConfig
		want string
	}{
		{"default", session.HTTPConfig{Manager: m}, "__Host-tide_session"},
		{"Path /", session.HTTPConfig{Manager: m, Path: "/"}, "__Host-tide_session"},
		{"insecure", session.HTTPConfig{Manager: m, Insecure: true}, "tide_session"},
		{"Domain", session.HTTPConfig{Manager: m, Domain: "example.com"}, "tide_session"},
		{"Path /app", session.HTTPConfig{Manager: m, Path: "/app"}, "tide_session"},
		{"named", session.HTTPConfig{Manager: m, CookieName: "sid"}, "sid"},
	} {
		mw, err := session.NewMiddleware(c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := session.Login(r.Context(), "alice", "", nil); err != nil {
				t.Error(err)
			}
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/app/login", nil))
		cs := rec.Result().Cookies()
		if len(cs) != 1 || cs[0].Name != c.want {
			t.Errorf("%s: cookies %v, want one named %q", c.name, cs, c.want)
			continue
		}
		if strings.HasPrefix(cs[0].Name, "__Host-") && (!cs[0].Secure || cs[0].Path != "/" || cs[0].Domain != "") {
			t.Errorf("%s: %v is not a cookie a browser accepts under the __Host- prefix", c.name, cs[0])
		}
	}
}
