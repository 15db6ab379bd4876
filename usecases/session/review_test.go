package session_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// The absolute deadline never moves: a Session's Record is exported, but
// an edit of its Deadline (or Created) saved by Save, Update or Rotate
// must not let the session outlive creation + AbsoluteTimeout.
func TestAbsoluteDeadlineCannotBeMoved(t *testing.T) {
	const idle, abs = time.Minute, time.Hour
	cases := []struct {
		name string
		edit func(ctx context.Context, m *session.Manager, s *session.Session) (*session.Session, error)
	}{
		{"Save", func(ctx context.Context, m *session.Manager, s *session.Session) (*session.Session, error) {
			s.Deadline = s.Deadline.Add(1000 * time.Hour)
			return s, m.Save(ctx, s)
		}},
		{"Update", func(ctx context.Context, m *session.Manager, s *session.Session) (*session.Session, error) {
			return m.Update(ctx, s.ID, func(s *session.Session) error {
				s.Deadline = s.Deadline.Add(1000 * time.Hour)
				return nil
			})
		}},
		{"Rotate", func(ctx context.Context, m *session.Manager, s *session.Session) (*session.Session, error) {
			s.Deadline = s.Deadline.Add(1000 * time.Hour)
			return s, m.Rotate(ctx, s)
		}},
		{"SaveCreated", func(ctx context.Context, m *session.Manager, s *session.Session) (*session.Session, error) {
			s.Created = s.Created.Add(1000 * time.Hour)
			s.Deadline = s.Deadline.Add(1000 * time.Hour)
			return s, m.Save(ctx, s)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			b, clk := storetest.NewEmbedded(t)
			m, err := session.New(session.Config{Backend: b, IdleTimeout: idle, AbsoluteTimeout: abs})
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.Create(ctx, "alice", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			deadline := s.Deadline
			id := s.ID
			ns, err := c.edit(ctx, m, s)
			if !errors.Is(err, session.ErrFixedField) {
				t.Errorf("%s of a moved deadline: got %v, want ErrFixedField", c.name, err)
			}
			if err == nil && ns != nil {
				id = ns.ID
			}
			// Stay active (a request every half idle timeout) past the
			// deadline.
			for now := clk.Time(); now.Before(deadline.Add(idle)); now = clk.Time() {
				clk.Advance(idle / 2)
				got, ok, err := m.Load(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if ok && !clk.Time().Before(deadline) {
					t.Fatalf("session loaded %v after its absolute deadline (deadline now %v): got live, want gone", clk.Time().Sub(deadline), got.Deadline.Sub(deadline))
				}
				if !ok && clk.Time().Before(deadline) {
					t.Fatalf("active session gone %v before its deadline", deadline.Sub(clk.Time()))
				}
			}
		})
	}
}

// No request of a session, however stale or concurrent, brings a revoked
// session back: after Destroy returns, every Load misses, whatever Loads,
// Saves, Touches and Updates were in flight.
func TestConcurrentRequestsDoNotUndoDestroy(t *testing.T) {
	ctx := context.Background()
	b, clk := storetest.NewEmbedded(t)
	m, err := session.New(session.Config{Backend: b, IdleTimeout: time.Minute, TouchInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 50 {
		s, err := m.Create(ctx, "alice", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		destroyed := make(chan struct{})
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-destroyed:
						if i > 0 {
							return
						}
					default:
					}
					clk.Advance(time.Microsecond)
					ls, ok, err := m.Load(ctx, s.ID)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						continue
					}
					ls.SetInt("n", i)
					switch g % 2 {
					case 0:
						if err := m.Save(ctx, ls); err != nil && !errors.Is(err, session.ErrConflict) && !errors.Is(err, session.ErrNotFound) {
							t.Error(err)
						}
					case 1:
						if _, err := m.Update(ctx, s.ID, func(s *session.Session) error { s.SetInt("n", i); return nil }); err != nil && !errors.Is(err, session.ErrNotFound) {
							t.Error(err)
						}
					}
				}
			}()
		}
		if _, err := m.Destroy(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		close(destroyed)
		wg.Wait()
		if _, ok, err := m.Load(ctx, s.ID); ok || err != nil {
			t.Fatalf("round %d: Load after Destroy: got ok=%v err=%v, want a miss", round, ok, err)
		}
		if n, err := m.List(ctx, "alice"); err != nil || len(n) != 0 {
			t.Fatalf("round %d: List after Destroy: got %d sessions (err %v), want 0", round, len(n), err)
		}
	}
}

// sessionKey is the store key of session id under the default prefix.
func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "tide:sess:" + hex.EncodeToString(sum[:])
}

// A record the Codec cannot decode (written by an older Codec, or
// damaged) must not make its session irrevocable, nor lock its browser
// out: Destroy deletes it, and Login and Logout through the middleware
// replace the cookie, revoking it.
func TestUndecodableRecordIsRevocable(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, m *session.Manager, id string)
	}{
		{"Destroy", func(t *testing.T, m *session.Manager, id string) {
			if ok, err := m.Destroy(ctx, id); !ok || err != nil {
				t.Errorf("Destroy: got %v, %v, want true, nil", ok, err)
			}
		}},
		{"MiddlewareLogin", func(t *testing.T, m *session.Manager, id string) {
			serveWith(t, m, id, func(w http.ResponseWriter, r *http.Request) {
				if _, err := session.Login(r.Context(), "bob", "", nil); err != nil {
					t.Errorf("Login: got %v, want nil", err)
				}
			})
		}},
		{"MiddlewareLogout", func(t *testing.T, m *session.Manager, id string) {
			serveWith(t, m, id, func(w http.ResponseWriter, r *http.Request) {
				if err := session.Logout(r.Context()); err != nil {
					t.Errorf("Logout: got %v, want nil", err)
				}
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := storetest.NewEmbedded(t)
			m, err := session.New(session.Config{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.Create(ctx, "alice", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok, err := b.Set(ctx, sessionKey(s.ID), []byte("\x00not a record"), store.SetOptions{TTL: time.Hour}); !ok || err != nil {
				t.Fatalf("damaging the record: %v %v", ok, err)
			}
			c.run(t, m, s.ID)
			if _, ok, err := b.Get(ctx, sessionKey(s.ID)); ok || err != nil {
				t.Errorf("the undecodable record: got present=%v err=%v, want deleted", ok, err)
			}
		})
	}
}

// serveWith serves one request carrying session cookie id through a
// default middleware on m, with handler h.
func serveWith(t *testing.T, m *session.Manager, id string, h http.HandlerFunc) *httptest.ResponseRecorder {
	t.Helper()
	mw, err := session.NewMiddleware(session.HTTPConfig{Manager: m})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/", nil)
	req.AddCookie(&http.Cookie{Name: "__Host-tide_session", Value: id})
	mw(h).ServeHTTP(rec, req)
	return rec
}

// A Session's ID is exported, but a Save or Rotate of a session whose ID
// was changed to another session's must not write this session's record
// (its user) under the other ID, nor revoke the other: whoever holds the
// other cookie would be signed in as this session's user. Nor may a
// Session built by hand (no version to compare) overwrite the session
// whose ID it names.
func TestChangedIDDoesNotOverwriteAnotherSession(t *testing.T) {
	ctx := context.Background()
	for _, op := range []string{"Save", "Rotate", "SaveHandBuilt"} {
		t.Run(op, func(t *testing.T) {
			m, err := session.New(session.Config{Backend: storetest.NewPerKeyBackend()})
			if err != nil {
				t.Fatal(err)
			}
			alice, err := m.Create(ctx, "alice", "", map[string]string{"role": "admin"})
			if err != nil {
				t.Fatal(err)
			}
			bob, err := m.Create(ctx, "bob", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			switch op {
			case "Save":
				alice.ID = bob.ID // both at version 1
				if err := m.Save(ctx, alice); !errors.Is(err, session.ErrFixedField) {
					t.Errorf("Save of a session whose ID was changed: got %v, want ErrFixedField", err)
				}
			case "Rotate":
				alice.ID = bob.ID
				if err := m.Rotate(ctx, alice); !errors.Is(err, session.ErrFixedField) {
					t.Errorf("Rotate of a session whose ID was changed: got %v, want ErrFixedField", err)
				}
			case "SaveHandBuilt":
				forged := &session.Session{ID: bob.ID, Record: session.Record{Deadline: alice.Deadline, Values: map[string][]byte{"cart": []byte("forged")}}}
				if err := m.Save(ctx, forged); !errors.Is(err, session.ErrNotFound) {
					t.Errorf("Save of a Session not from the Manager: got %v, want ErrNotFound", err)
				}
			}
			got, ok, err := m.Load(ctx, bob.ID)
			if !ok || err != nil || got.UserID != "bob" {
				user := "(none)"
				if ok {
					user = got.UserID
				}
				t.Errorf("bob's session after %s: got ok=%v err=%v user %s, want bob's", op, ok, err, user)
			}
		})
	}
}
