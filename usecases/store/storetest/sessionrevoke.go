package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store"
)

// hookedBackend runs hook once, just before the first write that matches.
type hookedBackend struct {
	store.Backend
	match func(key string, o store.SetOptions) bool
	hook  func()
	fired atomic.Bool
}

func (h *hookedBackend) Set(ctx context.Context, key string, value []byte, o store.SetOptions) (uint64, bool, error) {
	if h.hook != nil && h.match(key, o) && h.fired.CompareAndSwap(false, true) {
		h.hook()
	}
	return h.Backend.Set(ctx, key, value, o)
}

// isRecordCreate matches the write that creates a session record (not an
// index: index keys contain "user:").
func isRecordCreate(key string, o store.SetOptions) bool {
	return o.IfAbsent && !strings.Contains(key, "user:")
}

// runSessionRevocation attacks revocation: adversary-chosen handles, and
// revocations racing with creation.
func runSessionRevocation(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	newManager := func(t *testing.T, b store.Backend, f Fixture) *session.Manager {
		t.Helper()
		u := f.unit()
		m, err := session.New(session.Config{Backend: b, IdleTimeout: 10 * u, AbsoluteTimeout: 30 * u, TouchInterval: 2 * u})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Run("DestroyHandleOnlyOwnSessions", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f.Backend, f)
		victim := mustCreate(t, m, "alice")
		mustCreate(t, m, "mallory")
		list, err := m.List(ctx, "alice")
		if err != nil || len(list) != 1 {
			t.Fatalf("List(alice): got (%d, %v), want 1 session", len(list), err)
		}
		sum := sha256.Sum256([]byte("alice"))
		hostile := []string{
			list[0].Handle,                       // alice's session, named by mallory
			"user:" + hex.EncodeToString(sum[:]), // alice's per-user index
			"", "../x", strings.Repeat("0", 64) + "x",
		}
		for _, h := range hostile {
			if d, err := m.DestroyHandle(ctx, "mallory", h); d {
				t.Errorf("DestroyHandle(mallory, %q): got (%v, %v), want nothing destroyed", h, d, err)
			}
		}
		if _, ok, _ := m.Load(ctx, victim.ID); !ok {
			t.Fatal("mallory destroyed alice's session by its handle")
		}
		if n, err := m.DestroyAll(ctx, "alice"); n != 1 || err != nil {
			t.Fatalf("DestroyAll(alice) after the attack: got (%d, %v), want (1, nil)", n, err)
		}
		if _, ok, _ := m.Load(ctx, victim.ID); ok {
			t.Fatal("alice's session survived DestroyAll: her index was destroyed through DestroyHandle")
		}
		own := mustCreate(t, m, "mallory")
		ml, _ := m.List(ctx, "mallory")
		for _, info := range ml {
			if d, err := m.DestroyHandle(ctx, "mallory", info.Handle); !d || err != nil {
				t.Errorf("DestroyHandle of mallory's own session: got (%v, %v), want (true, nil)", d, err)
			}
		}
		if _, ok, _ := m.Load(ctx, own.ID); ok {
			t.Fatal("DestroyHandle of one's own session left it live")
		}
	})
	t.Run("CreateDuringDestroyAll", func(t *testing.T) {
		f := newFixture(t)
		hb := &hookedBackend{Backend: f.Backend, match: isRecordCreate}
		m := newManager(t, hb, f)
		old := mustCreate(t, m, "bob")
		hb.fired.Store(false)
		hb.hook = func() {
			// The index entry of the new session exists, its record not yet.
			if _, err := m.DestroyAll(ctx, "bob"); err != nil {
				t.Error(err)
			}
		}
		s := mustCreate(t, m, "bob")
		if _, ok, _ := m.Load(ctx, old.ID); ok {
			t.Fatal("the session created before DestroyAll survived it")
		}
		if _, err := m.DestroyAll(ctx, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := m.Load(ctx, s.ID); ok {
			t.Fatal("a session created during DestroyAll escaped the next DestroyAll")
		}
	})
	t.Run("CreateDuringList", func(t *testing.T) {
		f := newFixture(t)
		hb := &hookedBackend{Backend: f.Backend, match: isRecordCreate}
		m := newManager(t, hb, f)
		hb.hook = func() {
			if _, err := m.List(ctx, "carol"); err != nil { // may prune the pending entry
				t.Error(err)
			}
		}
		s := mustCreate(t, m, "carol")
		if _, err := m.DestroyAll(ctx, "carol"); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := m.Load(ctx, s.ID); ok {
			t.Fatal("a session created during List escaped DestroyAll")
		}
	})
	t.Run("MiddlewareSavesContextSession", func(t *testing.T) {
		f := newFixture(t)
		m := newManager(t, f.Backend, f)
		s := mustCreate(t, m, "dave")
		mw := func(h http.HandlerFunc) http.Handler {
			mw, err := session.NewMiddleware(session.HTTPConfig{Manager: m, Insecure: true})
			if err != nil {
				t.Fatal(err)
			}
			return mw(h)
		}
		srv, served := disconnectServer(t, mw(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/cart":
				session.FromContext(r.Context()).Set("cart", []byte("3 items"))
			case "/slow":
				gone(t, r) // the client gives up before the handler changes the session
				session.SetValue(r.Context(), "coupon", []byte("SAVE10"))
			}
		}))
		cookie := map[string]string{"Cookie": "tide_session=" + s.ID}
		send(t, http.MethodGet, srv.URL+"/cart", "", cookie)
		<-served
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/slow", nil)
		req.Header.Set("Cookie", "tide_session="+s.ID)
		impatientDo(t, req)
		<-served
		got, ok, err := m.Load(ctx, s.ID)
		if !ok || err != nil {
			t.Fatalf("Load: got (%v, %v), want the session", ok, err)
		}
		if v, _ := got.Get("cart"); string(v) != "3 items" {
			t.Errorf("FromContext(ctx).Set in a handler: got cart %q, want it saved", v)
		}
		if v, _ := got.Get("coupon"); string(v) != "SAVE10" {
			t.Errorf("SetValue after the client disconnected: got coupon %q, want it saved", v)
		}
	})
}
