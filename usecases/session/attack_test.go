package session_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// slowRequest serves one request of session id through mw, with a handler
// that runs edit after another party's change (between) has been saved:
// the request loaded the session before that change.
func slowRequest(t *testing.T, mw func(http.Handler) http.Handler, id string, between func(), edit func(r *http.Request) error) *httptest.ResponseRecorder {
	t.Helper()
	loaded, proceed := make(chan struct{}), make(chan struct{})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(loaded)
		<-proceed
		if err := edit(r); err != nil {
			t.Errorf("handler: %v", err)
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := httptest.NewRequest("POST", "/", nil)
		req.AddCookie(&http.Cookie{Name: "__Host-tide_session", Value: id})
		h.ServeHTTP(rec, req)
	}()
	<-loaded
	between()
	close(proceed)
	<-done
	return rec
}

// The merge of a request's changes into a session another request changed
// meanwhile must not bring back an authorization entry the other request
// removed: a request that added one entry (a step-up) does not restore a
// role revoked while it ran.
func TestMergeDoesNotRestoreRevokedAuthorization(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, _ := session.New(session.Config{Backend: b})
	mw, _ := session.NewMiddleware(session.HTTPConfig{Manager: m})
	ctx := context.Background()
	s, err := m.Create(ctx, "alice", "", map[string]string{"role": "admin", "mfa": "1"})
	if err != nil {
		t.Fatal(err)
	}
	slowRequest(t, mw, s.ID, func() {
		if _, err := m.Update(ctx, s.ID, func(s *session.Session) error {
			delete(s.Auth, "role") // the admin role is revoked
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}, func(r *http.Request) error {
		session.FromContext(r.Context()).Auth["mfa"] = "2" // step-up
		return nil
	})
	got, ok, err := m.Load(ctx, s.ID)
	if !ok || err != nil {
		t.Fatalf("Load: %v %v", ok, err)
	}
	if role, ok := got.Auth["role"]; ok {
		t.Errorf("the revoked role came back: role=%q", role)
	}
	if got.Auth["mfa"] != "2" {
		t.Errorf("the request's own change was lost: mfa=%q, want 2", got.Auth["mfa"])
	}
}

// RotateID saves the request's unsaved changes first; when another request
// saved the session meanwhile (the changes are merged), the rotation still
// succeeds, and the new ID holds both requests' changes.
func TestRotateIDAfterAMergedSave(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	m, _ := session.New(session.Config{Backend: b})
	mw, _ := session.NewMiddleware(session.HTTPConfig{Manager: m})
	ctx := context.Background()
	s, err := m.Create(ctx, "alice", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var newID string
	rec := slowRequest(t, mw, s.ID, func() {
		if _, err := m.Update(ctx, s.ID, func(s *session.Session) error {
			s.SetString("other-tab", "x")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}, func(r *http.Request) error {
		session.SetValue(r.Context(), "this-tab", []byte("y"))
		if err := session.RotateID(r.Context()); err != nil {
			return err
		}
		newID = session.FromContext(r.Context()).ID
		return nil
	})
	if rec.Code != http.StatusOK {
		t.Fatalf("RotateID after another request's save failed (status %d)", rec.Code)
	}
	if _, ok, _ := m.Load(ctx, s.ID); ok {
		t.Error("the old ID still loads after RotateID")
	}
	got, ok, err := m.Load(ctx, newID)
	if !ok || err != nil {
		t.Fatalf("Load of the new ID: %v %v", ok, err)
	}
	for _, name := range []string{"other-tab", "this-tab"} {
		if _, ok := got.Get(name); !ok {
			t.Errorf("value %q lost in the rotation", name)
		}
	}
}

// Login promises that the request's previous session is unusable once it
// returns. If that session could not be loaded (the store failed), Login
// cannot revoke it: it fails rather than hand out a new session beside a
// still-valid old ID.
func TestLoginAfterAFailedLoadLeavesNoValidOldID(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	m, _ := session.New(session.Config{Backend: flaky})
	mw, _ := session.NewMiddleware(session.HTTPConfig{Manager: m})
	ctx := context.Background()
	old, err := m.CreateAnonymous(ctx) // say, an ID an attacker planted
	if err != nil {
		t.Fatal(err)
	}
	var loginErr error
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flaky.Down.Store(false) // the store is back by the time the handler runs
		_, loginErr = session.Login(r.Context(), "alice", "", nil)
	}))
	flaky.Down.Store(true) // the load fails
	req := httptest.NewRequest("POST", "/login", nil)
	req.AddCookie(&http.Cookie{Name: "__Host-tide_session", Value: old.ID})
	h.ServeHTTP(httptest.NewRecorder(), req)
	if _, ok, _ := m.Load(ctx, old.ID); ok && loginErr == nil {
		t.Error("Login succeeded and the request's previous session ID still loads")
	}
}

// Logout promises to revoke the request's session. If that session could
// not be loaded (the store failed), Logout reports the failure rather than
// clear the cookie and leave the session valid for anyone holding its ID.
func TestLogoutAfterAFailedLoadDoesNotClaimSuccess(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	flaky := &storetest.Flaky{Backend: b}
	m, _ := session.New(session.Config{Backend: flaky})
	mw, _ := session.NewMiddleware(session.HTTPConfig{Manager: m})
	ctx := context.Background()
	s, err := m.Create(ctx, "alice", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var logoutErr error
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flaky.Down.Store(false)
		logoutErr = session.Logout(r.Context())
	}))
	flaky.Down.Store(true)
	req := httptest.NewRequest("POST", "/logout", nil)
	req.AddCookie(&http.Cookie{Name: "__Host-tide_session", Value: s.ID})
	h.ServeHTTP(httptest.NewRecorder(), req)
	if _, ok, _ := m.Load(ctx, s.ID); ok && logoutErr == nil {
		t.Error("Logout reported success and the session still loads")
	}
}
