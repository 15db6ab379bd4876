package session_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// indexLen returns how many entries the store holds in userID's index
// (under the default prefix), read straight from the backend.
func indexLen(t *testing.T, b session.Backend, userID string) int {
	t.Helper()
	sum := sha256.Sum256([]byte(userID))
	it, ok, err := b.Get(context.Background(), "tide:sess:user:"+hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0
	}
	var idx []json.RawMessage
	if err := json.Unmarshal(it.Value, &idx); err != nil {
		t.Fatal(err)
	}
	return len(idx)
}

// A user's index grew by one entry per sign-in and lost entries only at
// their absolute deadline (24 h by default) or through List: whoever can
// sign in as a user (the user's own script, an attacker with the
// password) could grow one store value without bound, every later
// sign-in reading and rewriting all of it and DestroyAll deleting every
// entry's key. It now holds at most MaxUserSessions (default DefaultMaxUserSessions, 100) entries:
// entries whose session is gone are dropped first, then the oldest live
// sessions are revoked.
func TestUserIndexIsBounded(t *testing.T) {
	const logins = 150
	for _, c := range []struct {
		name string
		// idle: every session is left idle (abandoned, as a script's
		// would be), the next sign-in 10 minutes later.
		idle bool
		// wantLive is how many of the user's sessions List reports after
		// the sign-ins.
		wantLive int
	}{
		{"sessions kept live", false, session.DefaultMaxUserSessions},
		// Signed in every 10 minutes and left: each session idles out 30
		// minutes later, so only the last two are live at the end.
		{"sessions abandoned", true, 2},
	} {
		b, clk := storetest.NewEmbedded(t)
		m, err := session.New(session.Config{Backend: b})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var ids []string
		for range logins {
			s, err := m.Create(ctx, "mallory", "", nil)
			if err != nil {
				t.Fatalf("%s: Create: %v", c.name, err)
			}
			ids = append(ids, s.ID)
			if c.idle {
				clk.Advance(10 * time.Minute)
			} else {
				clk.Advance(time.Second)
			}
		}
		if got := indexLen(t, b, "mallory"); got > session.DefaultMaxUserSessions {
			t.Errorf("%s: after %d sign-ins the index holds %d entries, want at most %d", c.name, logins, got, session.DefaultMaxUserSessions)
		}
		infos, err := m.List(ctx, "mallory")
		if err != nil || len(infos) != c.wantLive {
			t.Errorf("%s: List got %d sessions (%v), want %d", c.name, len(infos), err, c.wantLive)
		}
		evicted := 0
		if !c.idle {
			evicted = logins - session.DefaultMaxUserSessions
		}
		if got := maps.Collect(m.Events())["evicted"]; got != uint64(evicted) {
			t.Errorf("%s: Events evicted got %d, want %d", c.name, got, evicted)
		}
		if c.idle {
			continue
		}
		// The newest DefaultMaxUserSessions live on, the older were revoked.
		for i, id := range ids {
			_, ok, err := m.Load(ctx, id)
			if want := i >= logins-session.DefaultMaxUserSessions; ok != want || err != nil {
				t.Errorf("%s: session %d of %d: Load got (%v, %v), want live %v", c.name, i, logins, ok, err, want)
			}
		}
		if n, err := m.DestroyAll(ctx, "mallory"); n != session.DefaultMaxUserSessions || err != nil {
			t.Errorf("%s: DestroyAll got (%d, %v), want (%d, nil)", c.name, n, err, session.DefaultMaxUserSessions)
		}
	}
}

// dropRecords is a backend that loses every session record Create writes
// (it answers the set-if-absent as done), so that their index entries stay
// "pending": a Create in flight, as far as the index can tell.
type dropRecords struct {
	session.Backend
	drop bool
}

func (d *dropRecords) Set(ctx context.Context, key string, value []byte, o store.SetOptions) (uint64, bool, error) {
	if d.drop && o.IfAbsent && len(key) == len("tide:sess:")+64 {
		return 1, true, nil
	}
	return d.Backend.Set(ctx, key, value, o)
}

// The limit's edges: a Rotate or a re-login at a full index replaces the
// session it revokes instead of evicting another (or itself); an index
// full of entries whose records may still be being written (younger than
// a minute, without a record) refuses a new session with
// ErrTooManySessions rather than drop an entry whose session would then
// escape DestroyAll; and New refuses a nonsense limit.
func TestUserIndexLimitEdges(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		max int
		ok  bool
	}{{-1, false}, {session.MaxMaxUserSessions + 1, false}, {0, true}, {1, true}, {session.MaxMaxUserSessions, true}} {
		b, _ := storetest.NewEmbedded(t)
		_, err := session.New(session.Config{Backend: b, MaxUserSessions: c.max})
		if got := err == nil; got != c.ok {
			t.Errorf("New with MaxUserSessions %d: got %v, want accepted %v (else ErrInvalidConfig)", c.max, err, c.ok)
		}
	}

	b, clk := storetest.NewEmbedded(t)
	m, _ := session.New(session.Config{Backend: b, MaxUserSessions: 3})
	var s [3]*session.Session
	for i := range s {
		s[i], _ = m.Create(ctx, "alice", "", nil)
		clk.Advance(time.Second)
	}
	oldest := s[0]
	if err := m.Rotate(ctx, oldest); err != nil {
		t.Fatalf("Rotate of the oldest session at a full index: got %v, want nil", err)
	}
	for i, x := range []*session.Session{oldest, s[1], s[2]} {
		if _, ok, err := m.Load(ctx, x.ID); !ok || err != nil {
			t.Errorf("after Rotate at a full index, session %d: Load got (%v, %v), want live", i, ok, err)
		}
	}
	relogin, err := m.Login(ctx, s[2], "alice", "", nil)
	if err != nil {
		t.Fatalf("re-login at a full index: %v", err)
	}
	for i, x := range []*session.Session{oldest, s[1], relogin} {
		if _, ok, err := m.Load(ctx, x.ID); !ok || err != nil {
			t.Errorf("after re-login at a full index, session %d: Load got (%v, %v), want live", i, ok, err)
		}
	}
	if got := indexLen(t, b, "alice"); got != 3 {
		t.Errorf("index after Rotate and re-login: got %d entries, want 3", got)
	}

	d := &dropRecords{Backend: b, drop: true}
	md, _ := session.New(session.Config{Backend: d, MaxUserSessions: 3})
	for i := range 3 {
		if _, err := md.Create(ctx, "bob", "", nil); err != nil {
			t.Fatalf("Create %d with its record lost: %v", i, err)
		}
	}
	if _, err := md.Create(ctx, "bob", "", nil); !errors.Is(err, session.ErrTooManySessions) {
		t.Errorf("Create at an index full of pending entries: got %v, want ErrTooManySessions", err)
	}
	clk.Advance(2 * time.Minute) // the pending entries are now dead
	d.drop = false
	if _, err := md.Create(ctx, "bob", "", nil); err != nil {
		t.Errorf("Create once the pending entries are dead: got %v, want nil", err)
	}
	// A sign-in at the limit drops only what it needs (one Get per dead
	// entry, oldest first); List drops the rest.
	if got := indexLen(t, b, "bob"); got != 3 {
		t.Errorf("bob's index after the Create: got %d entries, want 3 (one dead entry dropped, one added)", got)
	}
	if infos, err := md.List(ctx, "bob"); len(infos) != 1 || err != nil {
		t.Errorf("List(bob): got (%d sessions, %v), want 1", len(infos), err)
	}
	if got := indexLen(t, b, "bob"); got != 1 {
		t.Errorf("bob's index after List: got %d entries, want 1", got)
	}
}

// Two Managers on one backend with different prefixes (neither a prefix of
// the other: "app1:sess:", "app2:sess:"), and the same user ID in both,
// never list or revoke each other's sessions; the same user ID in two
// tenants of one Manager is one user (see "Revocation").
func TestUserIndexIsPerPrefix(t *testing.T) {
	ctx := context.Background()
	b, _ := storetest.NewEmbedded(t)
	m1, _ := session.New(session.Config{Backend: b, Prefix: "app1:sess:"})
	m2, _ := session.New(session.Config{Backend: b, Prefix: "app2:sess:"})
	s1, _ := m1.Create(ctx, "alice", "acme", nil)
	s2, _ := m2.Create(ctx, "alice", "acme", nil)
	for _, c := range []struct {
		name string
		run  func() (int, error)
	}{
		{"List in app2", func() (int, error) { l, err := m2.List(ctx, "alice"); return len(l), err }},
		{"DestroyAll in app2", func() (int, error) { return m2.DestroyAll(ctx, "alice") }},
	} {
		if n, err := c.run(); n != 1 || err != nil {
			t.Errorf("%s: got (%d, %v), want (1, nil): app2's own session only", c.name, n, err)
		}
		if _, ok, err := m1.Load(ctx, s1.ID); !ok || err != nil {
			t.Errorf("%s: app1's session: Load got (%v, %v), want live", c.name, ok, err)
		}
	}
	if _, ok, _ := m2.Load(ctx, s2.ID); ok {
		t.Error("app2's session survived app2's DestroyAll")
	}
	if _, ok, _ := m2.Load(ctx, s1.ID); ok {
		t.Error("app1's session ID loads in app2")
	}
	l, _ := m1.List(ctx, "alice")
	if d, err := m2.DestroyHandle(ctx, "alice", l[0].Handle); d || err != nil {
		t.Errorf("DestroyHandle in app2 of app1's handle: got (%v, %v), want (false, nil)", d, err)
	}
	if n, err := m1.DestroyAll(ctx, "alice"); n != 1 || err != nil {
		t.Errorf("DestroyAll in app1: got (%d, %v), want (1, nil)", n, err)
	}
}

// cancelAfterIndex is a backend that cancels a sign-in's context once its
// index entry is written, as a client that hangs up mid-request does.
type cancelAfterIndex struct {
	session.Backend
	cancel context.CancelFunc
}

func (c *cancelAfterIndex) Set(ctx context.Context, key string, value []byte, o store.SetOptions) (uint64, bool, error) {
	v, ok, err := c.Backend.Set(ctx, key, value, o)
	if c.cancel != nil && strings.HasPrefix(key, "tide:sess:user:") {
		c.cancel()
	}
	return v, ok, err
}

// A sign-in whose caller gave up after its index entry was written (the
// client hung up) wrote no record, and left its entry behind: a pending
// entry, taken for a sign-in in flight for a minute. At MaxUserSessions 1
// the user's next sign-ins failed with ErrTooManySessions for that
// minute; with the default, a hundred hang-ups locked the user out. The
// sign-in now removes its entry when its context is done before the
// record is written (nothing can write that record any more).
func TestCancelledSignInLeavesNoPendingEntry(t *testing.T) {
	for _, c := range []struct {
		name string
		// left is how many entries the index holds after the cancelled
		// sign-in: a Create made room first (revoking the live session),
		// a Login or Rotate of the live session replaces it.
		left   int
		signIn func(m *session.Manager, ctx context.Context, s *session.Session) error
	}{
		{"Create", 0, func(m *session.Manager, ctx context.Context, _ *session.Session) error {
			_, err := m.Create(ctx, "alice", "", nil)
			return err
		}},
		{"Login", 1, func(m *session.Manager, ctx context.Context, s *session.Session) error {
			_, err := m.Login(ctx, s, "alice", "", nil)
			return err
		}},
		{"Rotate", 1, func(m *session.Manager, ctx context.Context, s *session.Session) error {
			return m.Rotate(ctx, s)
		}},
	} {
		b, _ := storetest.NewEmbedded(t)
		cb := &cancelAfterIndex{Backend: b}
		m, err := session.New(session.Config{Backend: cb, MaxUserSessions: 1})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.Create(context.Background(), "alice", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cb.cancel = cancel
		if err := c.signIn(m, ctx, s); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled sign-in: got %v, want context.Canceled", c.name, err)
		}
		cb.cancel = nil
		if got := indexLen(t, b, "alice"); got != c.left {
			t.Errorf("%s: index after the cancelled sign-in: got %d entries, want %d (no pending one)", c.name, got, c.left)
		}
		if _, err := m.Create(context.Background(), "alice", "", nil); err != nil {
			t.Errorf("%s: Create after the cancelled sign-in: got %v, want nil", c.name, err)
		}
	}
}

// otherCodec is a Codec that reads no record JSON wrote: a Manager after a
// change of Codec, facing the sessions of the one before.
type otherCodec struct{ session.JSON }

func (otherCodec) Marshal(r *session.Record) ([]byte, error) {
	b, err := session.JSON{}.Marshal(r)
	return append([]byte("v2"), b...), err
}

func (otherCodec) Unmarshal(data []byte, r *session.Record) error {
	rest, ok := bytes.CutPrefix(data, []byte("v2"))
	if !ok {
		return errors.New("not a v2 record")
	}
	return session.JSON{}.Unmarshal(rest, r)
}

// After a change of Codec, the records written before cannot be decoded:
// List and a sign-in at the limit took their index entries for another
// user's and dropped them, leaving the records in place. Rolled back to
// the old Codec, those sessions loaded again, listed in no index:
// DestroyAll missed them, and they counted against no limit. Now List
// keeps such an entry (it leaves at its deadline, or when DestroyAll
// revokes it), and a sign-in that must make room revokes its record
// before dropping it, as it does a live session's.
func TestUndecodableSessionStaysIndexed(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func(m2 *session.Manager) error
		// revoked: the step revoked the old session itself.
		revoked bool
	}{
		{"List", func(m2 *session.Manager) error { _, err := m2.List(ctx, "alice"); return err }, false},
		{"Create at the limit", func(m2 *session.Manager) error { _, err := m2.Create(ctx, "alice", "", nil); return err }, true},
	} {
		b, clk := storetest.NewEmbedded(t)
		m1, _ := session.New(session.Config{Backend: b, MaxUserSessions: 1})
		m2, _ := session.New(session.Config{Backend: b, MaxUserSessions: 1, Codec: otherCodec{}})
		old, err := m1.Create(ctx, "alice", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute) // past the grace of a sign-in in flight
		if err := c.run(m2); err != nil {
			t.Fatalf("%s with the new Codec: %v", c.name, err)
		}
		// Rolled back: the old Codec reads the old session again.
		_, live, _ := m1.Load(ctx, old.ID)
		if live == c.revoked {
			t.Errorf("%s: the old session after it: live %v, want %v", c.name, live, !c.revoked)
		}
		if !live {
			continue
		}
		if n, err := m1.DestroyAll(ctx, "alice"); err != nil || n < 1 {
			t.Errorf("%s: DestroyAll with the old Codec: got (%d, %v), want the old session revoked", c.name, n, err)
		}
		if _, ok, _ := m1.Load(ctx, old.ID); ok {
			t.Errorf("%s: the old session survived DestroyAll", c.name)
		}
	}
}
