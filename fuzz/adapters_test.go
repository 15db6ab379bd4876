package fuzz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/session"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// The adapters' public inputs: session IDs and cookies, idempotency keys and
// payloads, rate-limit parameters and keys, lease names, holders and tokens,
// flag definitions and rollout percentages. Each target feeds arbitrary
// values through the adapter on an embedded backend with a manual clock and
// checks the adapter's documented promises, and that no input panics.

func newBackend(t *testing.T) (*embedded.Backend, *clock.Manual, *engine.Engine) {
	t.Helper()
	clk := clock.NewManual(start)
	e, err := engine.New(engine.Config{Shards: 4, Clock: clk, ExpiryInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	b, err := embedded.New(embedded.Config{Engine: e, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return b, clk, e
}

// str reads a string of up to max bytes, or one of a few interesting fixed
// ones.
func (r *in) str(max int) string {
	switch c := r.u8(); {
	case c < 200:
		return string(r.bytes(max))
	case c < 210:
		return ""
	case c < 220:
		return strings.Repeat("x", 70_000) // over the engine's default key limit
	case c < 230:
		return "\x00{}\r\n;=,\" é"
	default:
		return fmt.Sprint("u", c%8)
	}
}

// FuzzSession: arbitrary session IDs and cookie headers never panic and
// look like an unknown session; created sessions round-trip their record
// and values (any names and bytes); revocation and expiry are immediate.
func FuzzSession(f *testing.F) {
	f.Add([]byte("create alice then load"), "not-an-id", "tide_session=abc")
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 200, 210, 220, 230}, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "tide_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA; x=y")
	f.Add([]byte{}, "", "")
	f.Fuzz(func(t *testing.T, data []byte, id, cookie string) {
		b, clk, e := newBackend(t)
		m, err := session.New(session.Config{Backend: b, IdleTimeout: time.Minute, AbsoluteTimeout: time.Hour, TouchInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		// An arbitrary ID is unknown: a miss, no error.
		if s, ok, err := m.Load(ctx, id); ok || err != nil || s != nil {
			t.Fatalf("Load(%q) = %v %v %v, want a plain miss", id, s, ok, err)
		}
		if ok, err := m.Destroy(ctx, id); ok || err != nil {
			t.Fatalf("Destroy(%q) = %v %v", id, ok, err)
		}
		// Arbitrary cookies through the middleware: no session, no panic.
		var saw *session.Session
		mw, err := session.NewMiddleware(session.HTTPConfig{Manager: m, Insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			saw = session.FromContext(r.Context())
			session.SetValue(r.Context(), "x", []byte("y")) // false without a session
		}))
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Cookie", cookie)
		h.ServeHTTP(httptest.NewRecorder(), req)
		if saw != nil {
			t.Fatalf("cookie %q gave a session", cookie)
		}

		r := &in{b: data}
		type live struct {
			s      *session.Session
			values map[string][]byte
			user   string // as given to Create
		}
		var sessions []live
		for r.more() {
			switch r.u8() % 6 {
			case 0, 1: // create with arbitrary user, tenant, auth
				user, tenant := r.str(20), r.str(20)
				auth := map[string]string{r.str(8): r.str(8)}
				rawUser := user
				s, err := m.Create(ctx, user, tenant, auth)
				if user == "" {
					if !errors.Is(err, session.ErrInvalidUser) {
						t.Fatalf("Create with an empty user: %v", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Create(%q, %q): %v", user, tenant, err)
				}
				if len(s.ID) != 43 || strings.ContainsAny(s.ID, "+/=") {
					t.Fatalf("session ID %q is not 43 base64url characters", s.ID)
				}
				// Strings that are not valid UTF-8 round-trip unchanged.
				got, ok, err := m.Load(ctx, s.ID)
				if !ok || err != nil || got.UserID != user || got.Tenant != tenant || !maps.Equal(got.Auth, auth) {
					t.Fatalf("Load after Create(%q, %q, %v) = %+v %v %v", user, tenant, auth, got, ok, err)
				}
				sessions = append(sessions, live{got, map[string][]byte{}, rawUser})
			case 2: // set a value with an arbitrary name and bytes, save, reload
				if len(sessions) == 0 {
					continue
				}
				i := int(r.u8()) % len(sessions)
				name, val := r.str(16), r.bytes(64)
				s, ok, err := m.Load(ctx, sessions[i].s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					continue // expired or revoked: checked elsewhere
				}
				s.Set(name, val)
				if err := m.Save(ctx, s); err != nil {
					t.Fatalf("Save: %v", err)
				}
				sessions[i].values[name] = append([]byte{}, val...)
				back, ok, err := m.Load(ctx, s.ID)
				if !ok || err != nil {
					t.Fatalf("Load after Save: %v %v", ok, err)
				}
				for k, v := range sessions[i].values {
					if got, _ := back.Get(k); !bytes.Equal(got, v) {
						t.Fatalf("value %q = %q, want %q", k, got, v)
					}
				}
				sessions[i].s = back
			case 3: // revoke one
				if len(sessions) == 0 {
					continue
				}
				i := int(r.u8()) % len(sessions)
				if _, err := m.Destroy(ctx, sessions[i].s.ID); err != nil {
					t.Fatal(err)
				}
				if _, ok, _ := m.Load(ctx, sessions[i].s.ID); ok {
					t.Fatal("session loads after Destroy")
				}
				sessions = append(sessions[:i], sessions[i+1:]...)
			case 4: // revoke all of a user's
				if len(sessions) == 0 {
					continue
				}
				user := sessions[int(r.u8())%len(sessions)].user
				if _, err := m.DestroyAll(ctx, user); err != nil {
					t.Fatal(err)
				}
				kept := sessions[:0]
				for _, l := range sessions {
					_, ok, err := m.Load(ctx, l.s.ID)
					if err != nil {
						t.Fatal(err)
					}
					if l.user == user && ok {
						t.Fatalf("session of %q loads after DestroyAll", user)
					}
					if l.user != user {
						kept = append(kept, l)
					}
				}
				sessions = kept
			case 5: // time passes: past the idle timeout everything is gone
				d := time.Duration(r.u8()) * time.Second
				clk.Advance(d)
				for _, l := range sessions {
					if _, ok, _ := m.Load(ctx, l.s.ID); ok && d >= time.Minute {
						t.Fatalf("session loads %v after its last activity (idle timeout 1m)", d)
					}
				}
				if d >= time.Minute {
					sessions = nil
				}
			}
		}
		// A live session through the middleware with its cookie.
		if len(sessions) > 0 {
			if _, ok, _ := m.Load(ctx, sessions[0].s.ID); !ok {
				return // idled out
			}
			req := httptest.NewRequest("GET", "/", nil)
			req.AddCookie(&http.Cookie{Name: "tide_session", Value: sessions[0].s.ID})
			saw = nil
			h.ServeHTTP(httptest.NewRecorder(), req)
			if saw == nil || saw.ID != sessions[0].s.ID {
				t.Fatal("the middleware did not load a live session from its cookie")
			}
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzIdempotency: arbitrary keys (scope, operation, key) and payloads.
// An operation executes at most once per key while its record lives,
// duplicates replay its result, another payload is ErrMismatch, an empty
// key is ErrInvalidKey, and scopes never collide.
func FuzzIdempotency(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "acct", "charge", "key-1", []byte("amount=5"))
	f.Add([]byte{}, "", "", "", []byte{})
	f.Add([]byte{9, 9, 9, 1, 1}, "a\x00b", "op", "k", []byte("x"))
	f.Fuzz(func(t *testing.T, data []byte, scope, op, key string, payload []byte) {
		b, clk, e := newBackend(t)
		s, err := idempotency.New(idempotency.Config{Backend: b, Retention: time.Hour, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		k := idempotency.Key{Scope: scope, Operation: op, Key: key}
		fp := idempotency.Fingerprint(payload)
		runs := 0
		fn := func(context.Context) ([]byte, error) { runs++; return append([]byte("result:"), payload...), nil }
		res, replayed, err := s.Do(ctx, k, fp, fn)
		if key == "" {
			if !errors.Is(err, idempotency.ErrInvalidKey) || runs != 0 {
				t.Fatalf("Do with an empty key: %v (runs %d)", err, runs)
			}
			return
		}
		if err != nil || replayed || runs != 1 {
			t.Fatalf("first Do: %q %v %v (runs %d)", res, replayed, err, runs)
		}
		want := res
		others := map[idempotency.Key]bool{}
		var passed time.Duration
		r := &in{b: data}
		for r.more() {
			switch r.u8() % 5 {
			case 0: // a duplicate replays
				res, replayed, err := s.Do(ctx, k, fp, fn)
				if err != nil || !replayed || !bytes.Equal(res, want) || runs != 1 {
					t.Fatalf("duplicate Do: %q %v %v (runs %d)", res, replayed, err, runs)
				}
			case 1: // another payload under the same key
				other := append(append([]byte{}, payload...), r.bytes(8)...)
				other = append(other, 0)
				if _, _, err := s.Do(ctx, k, idempotency.Fingerprint(other), fn); !errors.Is(err, idempotency.ErrMismatch) || runs != 1 {
					t.Fatalf("Do with another payload: %v (runs %d)", err, runs)
				}
			case 2: // another scope, operation or key is independent
				k2 := k
				switch r.u8() % 3 {
				case 0:
					k2.Scope += r.str(4) + "\x01"
				case 1:
					k2.Operation += "\x01"
				case 2:
					k2.Key += "\x01"
				}
				n := runs
				first := !others[k2]
				others[k2] = true
				if _, replayed, err := s.Do(ctx, k2, fp, fn); err != nil || replayed == first || first && runs != n+1 {
					t.Fatalf("Do under %+v (first %v): replayed=%v %v (runs %d → %d)", k2, first, replayed, err, n, runs)
				}
				runs = n // only k's runs are counted below
			case 3: // a claim of a completed key returns its result as
				// stored (Claim.Result is the result, not Do's encoding).
				c, err := s.Claim(ctx, k, fp)
				if err != nil || c.State != idempotency.Completed || !bytes.Equal(c.Result, want) {
					t.Fatalf("Claim of a completed key: %+v %v", c, err)
				}
			case 4: // time passes within the retention: still replayed
				if d := time.Duration(r.u8()) * time.Second; passed+d < 59*time.Minute {
					clk.Advance(d)
					passed += d
				}
			}
		}
		// After the retention the key is fresh.
		clk.Advance(2 * time.Hour)
		if _, replayed, err := s.Do(ctx, k, fp, fn); err != nil || replayed || runs != 2 {
			t.Fatalf("Do after the retention: replayed=%v %v (runs %d)", replayed, err, runs)
		}
		// The HTTP form with an arbitrary header value.
		mw, err := idempotency.NewMiddleware(idempotency.MiddlewareConfig{Store: s, Scope: func(*http.Request) string { return "fuzz" }})
		if err != nil {
			t.Fatal(err)
		}
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(201)
		}))
		for i := 0; i < 2; i++ {
			req := httptest.NewRequest("POST", "/pay", bytes.NewReader(payload))
			req.Header["Idempotency-Key"] = []string{key}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 201 && rec.Code != 400 {
				t.Fatalf("middleware attempt %d with key %q: status %d", i, key, rec.Code)
			}
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzRateLimit: arbitrary limits, periods, bursts, algorithms, keys and
// costs. New rejects nonsense with ErrInvalidConfig; AllowN rejects a
// negative cost or one above the allowance with ErrInvalidCost; within one
// instant no limiter admits more than its allowance; a denied request
// changes nothing; Remaining never exceeds the limit.
func FuzzRateLimit(f *testing.F) {
	f.Add(uint8(0), int64(10), int64(time.Second), int64(0), "user:1", []byte{1, 1, 1, 1, 5, 200, 1})
	f.Add(uint8(1), int64(3), int64(time.Minute), int64(0), "", []byte{1, 1, 1, 1, 0})
	f.Add(uint8(2), int64(5), int64(time.Second), int64(0), "{tag}", []byte{2, 2, 9, 1, 100, 1})
	f.Add(uint8(0), int64(-1), int64(0), int64(-5), "k", []byte{})
	f.Add(uint8(0), int64(1<<62), int64(1), int64(0), "k", []byte{1})
	f.Fuzz(func(t *testing.T, alg uint8, limit, period, burst int64, key string, data []byte) {
		b, clk, e := newBackend(t)
		cfg := ratelimit.Config{Name: "fuzz", Backend: b, Algorithm: ratelimit.Algorithm(alg % 4), Limit: limit, Period: time.Duration(period), Burst: burst}
		l, err := ratelimit.New(cfg)
		bad := limit < 1 || period <= 0 || alg%4 > 2 || burst < 0 ||
			(alg%4 == 0 && period/limit < 1)
		if err != nil {
			if !errors.Is(err, ratelimit.ErrInvalidConfig) {
				t.Fatalf("New(%+v): %v, want ErrInvalidConfig", cfg, err)
			}
			if !bad {
				t.Logf("New(%+v) rejected: %v", cfg, err) // stricter than our guess: fine
			}
			return
		}
		if bad {
			t.Fatalf("New(%+v) accepted a nonsense config", cfg)
		}
		allowance := l.Config().Limit
		if cfg.Algorithm == ratelimit.TokenBucket {
			allowance = l.Config().Burst
		}
		ctx := context.Background()
		admitted := int64(0) // since the last clock move
		r := &in{b: data}
		for r.more() {
			c := r.u8()
			switch {
			case c < 200:
				n := int64(c%8) - 1 // -1..6
				if c%16 == 15 {
					n = allowance + 1
				}
				before, _ := l.AllowN(ctx, key, 0)
				res, err := l.AllowN(ctx, key, n)
				if n < 0 || n > allowance {
					if !errors.Is(err, ratelimit.ErrInvalidCost) || res.Allowed {
						t.Fatalf("AllowN(%d) with allowance %d: %+v %v, want ErrInvalidCost", n, allowance, res, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("AllowN(%d): %v", n, err)
				}
				if res.Remaining < 0 || res.Remaining > allowance {
					t.Fatalf("Remaining %d outside 0..%d", res.Remaining, allowance)
				}
				if res.Allowed {
					admitted += n
					if admitted > allowance {
						t.Fatalf("%s admitted %d > allowance %d at one instant", cfg.Algorithm, admitted, allowance)
					}
				} else {
					if res.RetryAfter <= 0 {
						t.Fatalf("denied with RetryAfter %v", res.RetryAfter)
					}
					after, _ := l.AllowN(ctx, key, 0)
					if after.Remaining != before.Remaining {
						t.Fatalf("a denied request changed Remaining %d → %d", before.Remaining, after.Remaining)
					}
				}
			case c < 230:
				clk.Advance(time.Duration(r.u8()) * time.Duration(max(period/64, 1)))
				admitted = 0
			case c < 240:
				if err := l.Reset(ctx, key); err != nil {
					t.Fatal(err)
				}
				admitted = 0
			default:
				// HTTP form with the key as a header.
				mw, err := ratelimit.NewMiddleware(ratelimit.MiddlewareConfig{Limiter: l, Key: func(r *http.Request) (string, bool) { return r.Header.Get("X-K"), true }})
				if err != nil {
					t.Fatal(err)
				}
				h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
				req := httptest.NewRequest("GET", "/", nil)
				req.Header.Set("X-K", strings.Map(func(r rune) rune {
					if r < ' ' || r == 0x7f {
						return -1
					}
					return r
				}, key))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code == 200 {
					if req.Header.Get("X-K") == key {
						admitted++
						if admitted > allowance {
							t.Fatalf("middleware admitted %d > allowance %d", admitted, allowance)
						}
					}
				} else if rec.Code != 429 {
					t.Fatalf("middleware status %d", rec.Code)
				}
			}
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzLease: arbitrary names and holders. Empty ones are ErrInvalidName; at
// most one holder at a time; fencing tokens strictly increase across
// acquisitions (also after expiry and release); a superseded lease can
// neither renew nor release, and the Resource rejects its token.
func FuzzLease(f *testing.F) {
	f.Add("jobs", "a", "b", []byte{0, 1, 2, 3, 4, 5, 0, 1})
	f.Add("", "", "x", []byte{0})
	f.Add("n\x00", "h{", "h}", []byte{0, 4, 200, 1, 0, 3, 2})
	f.Fuzz(func(t *testing.T, name, h1, h2 string, data []byte) {
		b, clk, e := newBackend(t)
		m, err := lease.New(lease.Config{Backend: b, TTL: 10 * time.Second, LocalClock: clk})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		res := lease.NewResource(0)
		holders := []string{h1, h2}
		var held [2]*lease.Lease
		var last uint64
		r := &in{b: data}
		for r.more() {
			c := r.u8()
			i := int(c>>4) % 2
			switch c % 6 {
			case 0, 1:
				l, info, ok, err := m.Acquire(ctx, name, holders[i])
				if name == "" || holders[i] == "" {
					if !errors.Is(err, lease.ErrInvalidName) {
						t.Fatalf("Acquire(%q, %q): %v, want ErrInvalidName", name, holders[i], err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if info.Token != last {
						t.Fatalf("Acquire refused: holder's token %d, last issued %d", info.Token, last)
					}
					continue
				}
				if l.Token <= last {
					t.Fatalf("token %d after %d: fencing tokens must strictly increase", l.Token, last)
				}
				other := held[1-i]
				if other != nil {
					if ok, _ := m.Renew(ctx, other); ok {
						t.Fatalf("two holders at once: %q (token %d) renewed while %q holds %d", other.Holder, other.Token, l.Holder, l.Token)
					}
					held[1-i] = nil
				}
				last = l.Token
				held[i] = l
				if err := res.Check(l.Token); err != nil {
					t.Fatalf("Resource rejected the newest token %d: %v", l.Token, err)
				}
			case 2:
				if held[i] != nil {
					if ok, err := m.Renew(ctx, held[i]); err != nil || !ok {
						held[i] = nil
					}
				}
			case 3:
				if held[i] != nil {
					m.Release(ctx, held[i])
					held[i] = nil
				}
			case 4:
				clk.Advance(time.Duration(r.u8()) * 100 * time.Millisecond)
			case 5:
				// A stale token is rejected by the resource.
				if last > 1 {
					if err := res.Check(last - 1); !errors.Is(err, lease.ErrStaleToken) {
						t.Fatalf("Resource accepted token %d after %d: %v", last-1, last, err)
					}
				}
			}
		}
		if info, _, err := m.Inspect(ctx, name); err == nil && info.Fence != last {
			t.Fatalf("Inspect fence %d, last token %d", info.Fence, last)
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzFlag: arbitrary flag names, salts, units and rollout values. An
// empty name or a rollout outside 0..10000 is ErrInvalidFlag and writes
// nothing; buckets are in 0..9999 and stable; raising the rollout keeps
// every unit that was in; a killed flag is off for everyone; every write
// appends exactly one audit record; rollback restores an earlier state.
func FuzzFlag(f *testing.F) {
	f.Add("new-ui", "", []byte{0, 1, 2, 3, 4, 5, 6}, 2500, 7500)
	f.Add("", "s", []byte{1}, -1, 10001)
	f.Add("f\x00g", "\xff", []byte{3, 3, 1, 0, 2, 5}, 10000, 0)
	f.Fuzz(func(t *testing.T, name, salt string, data []byte, p1, p2 int) {
		b, _, e := newBackend(t)
		s, err := featureflag.New(featureflag.Config{Backend: b})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		// A name or salt that is not valid UTF-8 survives the round trip.
		badRollout := func(p int) bool { return p < 0 || p > featureflag.Buckets }
		fl, err := s.Create(ctx, name, featureflag.State{Enabled: true, Rollout: p1, Salt: salt}, "fuzz", "create")
		if name == "" || badRollout(p1) {
			if !errors.Is(err, featureflag.ErrInvalidFlag) {
				t.Fatalf("Create(%q, rollout %d): %v, want ErrInvalidFlag", name, p1, err)
			}
			if _, ok, _ := s.Get(ctx, name); ok && name != "" {
				t.Fatal("a rejected Create wrote the flag")
			}
			return
		}
		if err != nil {
			t.Fatalf("Create(%q, %d): %v", name, p1, err)
		}
		r := &in{b: data}
		units := []string{"", "u1", "\x00", strings.Repeat("z", 300)}
		for range 4 {
			units = append(units, r.str(12))
		}
		for _, u := range units {
			bk := featureflag.Bucket(name, salt, u)
			if bk < 0 || bk >= featureflag.Buckets || bk != featureflag.Bucket(name, salt, u) {
				t.Fatalf("Bucket(%q, %q, %q) = %d", name, salt, u, bk)
			}
		}
		revs := uint64(1)
		for r.more() {
			prev := fl
			var err error
			switch r.u8() % 5 {
			case 0:
				fl, err = s.SetRollout(ctx, name, p2, "fuzz", "")
				if badRollout(p2) {
					if !errors.Is(err, featureflag.ErrInvalidFlag) {
						t.Fatalf("SetRollout(%d): %v, want ErrInvalidFlag", p2, err)
					}
					fl = prev
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				revs++
				if p2 >= prev.Rollout && !prev.Killed {
					for _, u := range units {
						if prev.On(u) && !fl.On(u) {
							t.Fatalf("raising the rollout %d → %d dropped unit %q", prev.Rollout, p2, u)
						}
					}
				}
			case 1:
				fl, err = s.Kill(ctx, name, "fuzz", "incident")
				if err != nil {
					t.Fatal(err)
				}
				revs++
				for _, u := range units {
					if fl.On(u) {
						t.Fatalf("killed flag on for %q", u)
					}
				}
			case 2:
				fl, err = s.Unkill(ctx, name, "fuzz", "")
				if err != nil {
					t.Fatal(err)
				}
				revs++
			case 3:
				rev := uint64(r.u8()) % (revs + 2)
				fl, err = s.Rollback(ctx, name, rev, "fuzz", "")
				if rev == 0 || rev > revs {
					if !errors.Is(err, featureflag.ErrInvalidFlag) {
						t.Fatalf("Rollback to unknown revision %d of %d: %v", rev, revs, err)
					}
					fl = prev
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				revs++
			case 4:
				p := int(int8(r.u8())) * 100
				_, err := s.Update(ctx, prev, featureflag.State{Enabled: true, Rollout: p}, "fuzz", "")
				if badRollout(p) && !errors.Is(err, featureflag.ErrInvalidFlag) {
					t.Fatalf("Update with rollout %d: %v", p, err)
				}
				if err == nil {
					revs++
				}
				fl, _, _ = s.Get(ctx, name)
			}
			if fl.Revision != revs {
				t.Fatalf("revision %d, want %d writes", fl.Revision, revs)
			}
		}
		hist, err := s.History(ctx, name)
		if err != nil || uint64(len(hist)) != revs {
			t.Fatalf("History has %d records for %d writes: %v", len(hist), revs, err)
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
	})
}
