package storetest

import (
	"context"
	"testing"

	"github.com/tidekv/tide/usecases/session"
)

// runSessionAnonymous checks anonymous sessions, Login (carry-over and the
// revocation of the pre-login ID) and the idle timeout of remembered
// sessions.
func runSessionAnonymous(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	newManager := func(t *testing.T, f Fixture) *session.Manager {
		t.Helper()
		u := f.unit()
		m, err := session.New(session.Config{Backend: f.Backend, IdleTimeout: 10 * u, AbsoluteTimeout: 100 * u,
			RememberIdleTimeout: 50 * u, TouchInterval: 2 * u})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Run("AnonymousLoginRevokesPreLoginID", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f)
		anon, err := m.CreateAnonymous(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if anon.UserID != "" || len(anon.ID) != 43 {
			t.Fatalf("CreateAnonymous: got user %q, ID of %d characters", anon.UserID, len(anon.ID))
		}
		anon.SetString("cart", "kettle")
		if err := m.Save(ctx, anon); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := m.Load(ctx, anon.ID); !ok || err != nil {
			t.Fatalf("Load(anonymous): got (%v, %v), want a hit", ok, err)
		}
		s, err := m.Login(ctx, anon, "alice", "acme", map[string]string{"role": "buyer"})
		if err != nil {
			t.Fatal(err)
		}
		if s.ID == anon.ID {
			t.Fatal("Login kept the pre-login ID")
		}
		if _, ok, err := m.Load(ctx, anon.ID); ok || err != nil {
			t.Fatalf("Load(pre-login ID): got (%v, %v), want a miss", ok, err)
		}
		got, ok, err := m.Load(ctx, s.ID)
		if !ok || err != nil {
			t.Fatalf("Load(signed in): got (%v, %v)", ok, err)
		}
		if v, _ := got.GetString("cart"); v != "kettle" || got.UserID != "alice" || got.Auth["role"] != "buyer" {
			t.Fatalf("signed-in session: got %+v, want alice with the visitor's cart", got.Record)
		}
		if infos, err := m.List(ctx, "alice"); err != nil || len(infos) != 1 {
			t.Fatalf("List(alice): got %v, %v; want the new session indexed", infos, err)
		}
		// A second login (another user on this browser) carries nothing.
		s2, err := m.Login(ctx, got, "bob", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s2.Get("cart"); ok {
			t.Fatal("alice's values carried over to bob's session")
		}
		if n, err := m.DestroyAll(ctx, "alice"); n != 0 || err != nil {
			t.Fatalf("DestroyAll(alice) after bob's login on her session: got (%d, %v), want nothing left", n, err)
		}
	})
	t.Run("RememberedSessionOutlivesIdleTimeout", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		m := newManager(t, f)
		u := f.unit()
		plain := mustCreate(t, m, "alice")
		kept := mustCreate(t, m, "alice")
		kept.Remember = true
		if err := m.Save(ctx, kept); err != nil {
			t.Fatal(err)
		}
		f.Advance(10*u + f.Slack)
		if _, ok, _ := m.Load(ctx, plain.ID); ok {
			t.Error("a plain session outlived IdleTimeout")
		}
		if _, ok, err := m.Load(ctx, kept.ID); !ok || err != nil {
			t.Errorf("a remembered session after IdleTimeout: got (%v, %v), want it live", ok, err)
		}
	})
}
