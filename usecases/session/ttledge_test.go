package session_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// TestTTLAtTheDeadline guards the TTLs a Manager computes from a
// session's deadline: saved 1 ns before its absolute deadline, the record
// and its user's index are written with a 1 ns TTL; at the deadline the
// session is gone (ErrNotFound) and no key is left, never one written
// with a TTL of 0 read as "forever".
func TestTTLAtTheDeadline(t *testing.T) {
	ctx := context.Background()
	b, clk := storetest.NewEmbedded(t)
	m, err := session.New(session.Config{Backend: b, IdleTimeout: time.Hour, AbsoluteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Create(ctx, "u", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour - time.Nanosecond)
	s.Set("k", []byte("v"))
	if err := m.Save(ctx, s); err != nil {
		t.Fatalf("Save 1 ns before the deadline: %v", err)
	}
	n := 0
	for k, it := range b.Engine().Items() {
		n++
		if it.TTL != time.Nanosecond {
			t.Errorf("key %q: TTL %v 1 ns before the deadline, want 1ns", k, it.TTL)
		}
	}
	if n != 2 {
		t.Errorf("got %d keys, want the record and the index", n)
	}
	clk.Advance(time.Nanosecond)
	if err := m.Save(ctx, s); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Save at the deadline: got %v, want ErrNotFound", err)
	}
	if _, ok, err := m.Load(ctx, s.ID); ok || err != nil {
		t.Errorf("Load at the deadline: got (%v, %v), want a miss", ok, err)
	}
	// A second session of the user, created at the first one's deadline,
	// rewrites the index: the due entry is dropped, not kept with TTL 0.
	s2, err := m.Create(ctx, "u", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if infos, err := m.List(ctx, "u"); err != nil || len(infos) != 1 {
		t.Errorf("List: got (%d sessions, %v), want only the new one", len(infos), err)
	}
	for k, it := range b.Engine().Items() {
		if it.TTL == engine.NoTTL || it.TTL > time.Hour {
			t.Errorf("key %q: TTL %v, want at most the new session's hour", k, it.TTL)
		}
	}
	if _, err := m.Destroy(ctx, s2.ID); err != nil {
		t.Fatal(err)
	}
	for k := range b.Engine().Items() {
		t.Errorf("key %q left after the user's last session ended", k)
	}
}
