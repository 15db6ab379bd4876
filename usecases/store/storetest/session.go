package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tidekv/tide/usecases/session"
)

// RunSession runs package session's contract suite on a backend.
func RunSession(t *testing.T, newFixture NewFunc) {
	newFixture = instrument(newFixture)
	ctx := context.Background()
	newManager := func(t *testing.T, f Fixture) *session.Manager {
		t.Helper()
		u := f.unit()
		m, err := session.New(session.Config{Backend: f.Backend, IdleTimeout: 10 * u, AbsoluteTimeout: 30 * u, TouchInterval: 2 * u})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Run("CreateLoadSave", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f)
		s, err := m.Create(ctx, "alice", "acme", map[string]string{"role": "admin"})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.ID) < 22 { // 128 bits in base64 is 22 characters
			t.Fatalf("session ID %q is shorter than 128 bits", s.ID)
		}
		s2, _ := m.Create(ctx, "alice", "acme", nil)
		if s2.ID == s.ID {
			t.Fatal("two sessions got the same ID")
		}
		s.Set("cart", []byte("3 items"))
		if err := m.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
		got, ok, err := m.Load(ctx, s.ID)
		if !ok || err != nil {
			t.Fatalf("Load: got (%v, %v), want a hit", ok, err)
		}
		if v, _ := got.Get("cart"); string(v) != "3 items" || got.UserID != "alice" || got.Tenant != "acme" || got.Auth["role"] != "admin" {
			t.Fatalf("Load: got %+v, want alice/acme/admin with the cart", got.Record)
		}
		misses := []struct{ name, id string }{
			{"unknown", flipFirst(s.ID)},
			{"malformed", "not a session id"},
			{"empty", ""},
			{"huge", strings.Repeat("x", 1<<20)},
		}
		for _, c := range misses {
			if s, ok, err := m.Load(ctx, c.id); ok || err != nil || s != nil {
				t.Errorf("Load(%s): got (%v, %v, %v), want a plain miss", c.name, s, ok, err)
			}
		}
	})
	t.Run("ArbitraryBytesRoundTrip", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f)
		// Strings that are not valid UTF-8 must come back exactly (a JSON
		// codec that rewrote them to U+FFFD would merge tenants "\xff" and
		// "\xfe" and break DestroyAll by the loaded user ID).
		for _, tenant := range []string{"\xff", "\xfe"} {
			s, err := m.Create(ctx, "0\xff0", tenant, map[string]string{"\xc8": "\xd2"})
			if err != nil {
				t.Fatal(err)
			}
			s.Set("\x80name", []byte{0, 0xff})
			if err := m.Save(ctx, s); err != nil {
				t.Fatal(err)
			}
			got, ok, err := m.Load(ctx, s.ID)
			if !ok || err != nil {
				t.Fatalf("Load: got (%v, %v)", ok, err)
			}
			v, _ := got.Get("\x80name")
			if got.UserID != "0\xff0" || got.Tenant != tenant || got.Auth["\xc8"] != "\xd2" || string(v) != "\x00\xff" {
				t.Fatalf("round trip: got user %q tenant %q auth %q value %q", got.UserID, got.Tenant, got.Auth, v)
			}
		}
		loaded, _, _ := m.Load(ctx, mustCreate(t, m, "0\xff0").ID)
		if n, err := m.DestroyAll(ctx, loaded.UserID); n != 3 || err != nil {
			t.Fatalf("DestroyAll by the loaded user ID: got (%d, %v), want (3, nil)", n, err)
		}
		// The user of a session is fixed.
		s := mustCreate(t, m, "mallory")
		s.UserID = "admin"
		if err := m.Save(ctx, s); !errors.Is(err, session.ErrInvalidUser) {
			t.Fatalf("Save with a changed user: got %v, want ErrInvalidUser", err)
		}
	})
	t.Run("SaveConflict", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f)
		s, _ := m.Create(ctx, "bob", "", nil)
		a, _, _ := m.Load(ctx, s.ID)
		b, _, _ := m.Load(ctx, s.ID)
		a.Set("x", []byte("from a"))
		b.Set("y", []byte("from b"))
		if err := m.Save(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := m.Save(ctx, b); !errors.Is(err, session.ErrConflict) {
			t.Fatalf("stale save: got %v, want ErrConflict", err)
		}
		if _, err := m.Update(ctx, s.ID, func(s *session.Session) error { s.Set("y", []byte("from b")); return nil }); err != nil {
			t.Fatal(err)
		}
		got, _, _ := m.Load(ctx, s.ID)
		if x, _ := got.Get("x"); string(x) != "from a" {
			t.Fatalf("a's update lost: got %q", x)
		}
		if y, _ := got.Get("y"); string(y) != "from b" {
			t.Fatalf("b's update lost: got %q", y)
		}
	})
	t.Run("IdleExpiry", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		m, u := newManager(t, f), f.unit()
		s, _ := m.Create(ctx, "carol", "", nil)
		f.Advance(10*u + f.Slack)
		if _, ok, _ := m.Load(ctx, s.ID); ok {
			t.Fatal("session alive after the idle timeout")
		}
	})
	t.Run("SlidingWithAbsoluteCap", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		m, u := newManager(t, f), f.unit()
		s, _ := m.Create(ctx, "dave", "", nil)
		deadline := s.Deadline
		// Activity every unit (by the store's clock, so that time spent in
		// calls on a slow backend counts): touches happen at most every 2
		// units (throttled), and the session outlives its idle timeout...
		writes, loads := 0, 0
		var last *session.Session
		for {
			f.Advance(u)
			if mustNow(t, f.Backend).After(deadline.Add(-2 * u)) {
				break // stay clear of the cap
			}
			got, ok, err := m.Load(ctx, s.ID)
			if !ok || err != nil {
				t.Fatalf("load %d: session gone (%v) before its absolute deadline", loads+1, err)
			}
			loads++
			if last != nil && !got.LastActive.Equal(last.LastActive) {
				writes++
			}
			last = got
			if !got.Deadline.Equal(deadline) {
				t.Fatalf("load %d: absolute deadline moved from %v to %v", loads, deadline, got.Deadline)
			}
		}
		if last == nil || last.LastActive.Sub(s.Created) <= 10*u {
			t.Fatal("the loads did not span the idle timeout: the backend is too slow for this Unit")
		}
		if writes > loads/2+1 {
			t.Fatalf("%d touches in %d loads a unit apart, want at most one per TouchInterval (2 units)", writes, loads)
		}
		// ...but not its absolute deadline.
		f.Advance(deadline.Sub(mustNow(t, f.Backend)) + f.Slack)
		if _, ok, _ := m.Load(ctx, s.ID); ok {
			t.Fatal("session alive past its absolute deadline")
		}
	})
	t.Run("RotateKeepsDeadline", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f)
		s, _ := m.Create(ctx, "erin", "", nil)
		old, deadline := s.ID, s.Deadline
		s.Set("k", []byte("v"))
		m.Save(ctx, s)
		if err := m.Rotate(ctx, s); err != nil {
			t.Fatal(err)
		}
		if s.ID == old {
			t.Fatal("Rotate kept the ID")
		}
		if _, ok, _ := m.Load(ctx, old); ok {
			t.Fatal("the old ID still works after Rotate")
		}
		got, ok, _ := m.Load(ctx, s.ID)
		if v, _ := got.Get("k"); !ok || string(v) != "v" || !got.Deadline.Equal(deadline) {
			t.Fatalf("rotated session: got (%v, %q, deadline %v), want its values and deadline %v", ok, v, got.Deadline, deadline)
		}
		if list, _ := m.List(ctx, "erin"); len(list) != 1 {
			t.Fatalf("List after Rotate: got %d sessions, want 1", len(list))
		}
	})
	t.Run("Revocation", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f)
		var frank []*session.Session
		for range 3 {
			s, _ := m.Create(ctx, "frank", "", nil)
			frank = append(frank, s)
		}
		grace, _ := m.Create(ctx, "grace", "", nil)
		if d, err := m.Destroy(ctx, frank[0].ID); !d || err != nil {
			t.Fatalf("Destroy: got (%v, %v), want (true, nil)", d, err)
		}
		if _, ok, _ := m.Load(ctx, frank[0].ID); ok {
			t.Fatal("revoked session still loads")
		}
		if list, _ := m.List(ctx, "frank"); len(list) != 2 {
			t.Fatalf("List: got %d, want 2", len(list))
		}
		if n, err := m.DestroyAll(ctx, "frank"); n != 2 || err != nil {
			t.Fatalf("DestroyAll: got (%d, %v), want (2, nil)", n, err)
		}
		for _, s := range frank {
			if _, ok, _ := m.Load(ctx, s.ID); ok {
				t.Fatal("a session survived DestroyAll")
			}
		}
		if _, ok, _ := m.Load(ctx, grace.ID); !ok {
			t.Fatal("DestroyAll of frank revoked grace's session")
		}
		if list, _ := m.List(ctx, "frank"); len(list) != 0 {
			t.Fatalf("List after DestroyAll: got %d, want 0", len(list))
		}
		if err := m.Save(ctx, frank[1]); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("Save of a revoked session: got %v, want ErrNotFound", err)
		}
	})
	t.Run("ConcurrentUpdatesNeverLost", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f)
		s, _ := m.Create(ctx, "heidi", "", nil)
		const n = 32
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := m.Update(ctx, s.ID, func(s *session.Session) error {
					s.Set(fmt.Sprint("k", i), []byte{byte(i)})
					return nil
				}); err != nil {
					t.Error(err)
				}
			}()
		}
		// Plain Save from many goroutines: each either lands or reports
		// ErrConflict; none is silently lost.
		var mu sync.Mutex
		landed := map[string]bool{}
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				x, ok, err := m.Load(ctx, s.ID)
				if !ok || err != nil {
					t.Error("load failed", err)
					return
				}
				name := fmt.Sprint("save", i)
				x.Set(name, []byte{1})
				switch err := m.Save(ctx, x); {
				case err == nil:
					mu.Lock()
					landed[name] = true
					mu.Unlock()
				case !errors.Is(err, session.ErrConflict):
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		got, _, _ := m.Load(ctx, s.ID)
		for i := range n {
			if _, ok := got.Get(fmt.Sprint("k", i)); !ok {
				t.Errorf("Update %d was lost", i)
			}
		}
		// Every Save that returned nil was based on the latest version, and
		// every later successful write was based on it or later: so every
		// key a successful Save wrote must still be there.
		for name := range landed {
			if _, ok := got.Get(name); !ok {
				t.Errorf("Save of %s returned nil but its update was lost", name)
			}
		}
		// Over a network every plain Save may lose its race to some Update
		// and correctly report ErrConflict, so none landing is not an error.
		t.Logf("%d of %d plain Saves landed; the rest reported ErrConflict", len(landed), n)
	})
	runSessionRevocation(t, newFixture)
	runSessionAnonymous(t, newFixture)
}

// flipFirst returns id with its first character changed: a well-formed ID
// that was never issued.
func flipFirst(id string) string {
	if id == "" {
		return "A"
	}
	c := byte('A')
	if id[0] == 'A' {
		c = 'B'
	}
	return string(c) + id[1:]
}

func mustCreate(t *testing.T, m *session.Manager, user string) *session.Session {
	t.Helper()
	s, err := m.Create(context.Background(), user, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
