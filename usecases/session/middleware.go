package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tidekv/tide/usecases/httpmw"
	"github.com/tidekv/tide/usecases/store"
)

// HTTPConfig configures NewMiddleware. Zero fields mean defaults.
type HTTPConfig struct {
	// Manager manages the sessions. Required.
	Manager *Manager
	// CookieName is the session cookie's name. "" means
	// "__Host-tide_session": browsers accept a cookie whose name starts
	// with __Host- only if it is Secure, has Path=/ and no Domain, so a
	// sibling subdomain cannot plant one (cookie tossing, which would give
	// the request a session of the attacker's choosing). With Insecure,
	// a Domain or a Path other than "/", which rule the prefix out, ""
	// means "tide_session". A name with the __Host- or __Secure- prefix
	// whose attributes the browser would refuse is ErrInvalidConfig.
	CookieName string
	// Path and Domain scope the cookie. Path "" means "/".
	Path, Domain string
	// Insecure drops the Secure attribute (for plain-HTTP development
	// only). By default the cookie is Secure.
	Insecure bool
	// SameSite is the cookie's SameSite mode. 0 means Lax. None requires
	// a Secure cookie.
	SameSite http.SameSite
	// RefuseOnLoadError answers a request whose session cannot be loaded
	// (the store failed) with 503 through Options.Responder. By default
	// the request proceeds without a session (fail closed: it is not
	// authenticated), and Start refuses to replace the cookie.
	RefuseOnLoadError bool
	// Options sets the Responder of RefuseOnLoadError, and the Logger and
	// OnError hook that hear about failed loads and saves. The session ID
	// and the cookie are never logged.
	Options httpmw.Options
}

// hostPrefix is the cookie-name prefix browsers accept only on a Secure
// cookie with Path=/ and no Domain (RFC 6265bis, "Cookie Name Prefixes").
const hostPrefix = "__Host-"

// saveTimeout bounds the save after the handler, which runs with a context
// the client cannot cancel.
const saveTimeout = 10 * time.Second

type ctxKey struct{}

// state is what the middleware puts in the request context. It belongs to
// the request's goroutine: the handler must not use the context helpers
// from goroutines of its own.
type state struct {
	cfg     *HTTPConfig
	w       http.ResponseWriter
	r       *http.Request
	sess    *Session
	loadErr error  // the store failed loading the cookie's session
	loadID  string // the cookie's session ID, when loadErr is set
	changed bool   // Set/Delete values were called through the context helpers
	snap    []byte // sess's record as loaded, encoded: a difference after the handler is saved
}

// use makes s the request's session, remembering its record as it is now.
func (st *state) use(s *Session) {
	st.sess, st.changed, st.snap = s, false, nil
	if s != nil {
		st.snap, _ = st.cfg.Manager.cfg.Codec.Marshal(&s.Record)
	}
}

// dirty reports whether the handler changed the session by any means: the
// context helpers, or FromContext(ctx).Set and direct edits of its Record.
func (st *state) dirty() bool {
	if st.sess == nil {
		return false
	}
	if st.changed || st.snap == nil {
		return true
	}
	enc, err := st.cfg.Manager.cfg.Codec.Marshal(&st.sess.Record)
	return err != nil || !bytes.Equal(enc, st.snap)
}

// NewMiddleware returns the session middleware for cfg, or an error
// wrapping ErrInvalidConfig. It has the standard shape, so it chains with
// http.ServeMux, chi and alice:
//
//	mw, err := session.NewMiddleware(session.HTTPConfig{Manager: m})
//	http.ListenAndServe(addr, mw(mux))
//
// The middleware loads the session named by the request's cookie into
// the request context (FromContext), runs next, and saves the session if
// the handler changed it, by any means: SetValue/DeleteValue, or
// FromContext(ctx).Set, Pop and direct edits of the Session's Record (the
// record is compared with its encoding as loaded).
//
// The save runs with a context the client cannot cancel (a client that
// disconnects does not lose the session's changes), bounded by ten
// seconds. If another request of the same session saved in between (two
// tabs), the handler's changes are merged into the newer record value by
// value (and authorization entry by entry), last writer winning per name,
// so neither request's changes are lost; a read-modify-write of one value
// that must not lose updates belongs in Manager.Update. A failed save is
// reported through Options (logged with its cause; never the session ID).
//
// Start, Login, Logout, RotateID and RememberMe, called from the handler,
// set or clear the cookie; they must be called before the handler writes
// its response. The cookie is HttpOnly, Secure (unless Insecure) and
// SameSite=Lax by default; it is a browser-session cookie (no Max-Age),
// except for a session with Record.Remember, whose cookie's Max-Age
// reaches the session's absolute deadline. The store's TTL is the
// authority on expiry either way.
//
// Every response gets "Vary: Cookie" (its content depends on the session),
// and a response that sets the cookie gets
// `Cache-Control: no-cache="Set-Cookie"` (added to any Cache-Control the
// handler set before), so that no shared cache stores a session cookie.
func NewMiddleware(cfg HTTPConfig) (func(http.Handler) http.Handler, error) {
	if cfg.Manager == nil {
		return nil, fmt.Errorf("%w: Manager is nil", ErrInvalidConfig)
	}
	if cfg.Path == "" {
		cfg.Path = "/"
	}
	hostOnly := !cfg.Insecure && cfg.Domain == "" && cfg.Path == "/"
	switch {
	case cfg.CookieName == "" && hostOnly:
		cfg.CookieName = hostPrefix + "tide_session"
	case cfg.CookieName == "":
		cfg.CookieName = "tide_session"
	case strings.HasPrefix(cfg.CookieName, hostPrefix) && !hostOnly:
		return nil, fmt.Errorf("%w: cookie %q needs Secure, Path \"/\" and no Domain (Insecure %v, Path %q, Domain %q)", ErrInvalidConfig, cfg.CookieName, cfg.Insecure, cfg.Path, cfg.Domain)
	case strings.HasPrefix(cfg.CookieName, "__Secure-") && cfg.Insecure:
		return nil, fmt.Errorf("%w: cookie %q needs Secure (Insecure is set)", ErrInvalidConfig, cfg.CookieName)
	}
	switch cfg.SameSite {
	case 0:
		cfg.SameSite = http.SameSiteLaxMode
	case http.SameSiteDefaultMode, http.SameSiteLaxMode, http.SameSiteStrictMode:
	case http.SameSiteNoneMode:
		if cfg.Insecure {
			return nil, fmt.Errorf("%w: SameSite=None requires a Secure cookie (Insecure is set)", ErrInvalidConfig)
		}
	default:
		return nil, fmt.Errorf("%w: SameSite = %d", ErrInvalidConfig, cfg.SameSite)
	}
	probe := &http.Cookie{Name: cfg.CookieName, Value: "x", Path: cfg.Path, Domain: cfg.Domain}
	if err := probe.Valid(); err != nil {
		return nil, fmt.Errorf("%w: cookie: %v", ErrInvalidConfig, err)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve(&cfg, next, w, r)
		})
	}, nil
}

func serve(cfg *HTTPConfig, next http.Handler, w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Cookie")
	st := &state{cfg: cfg, w: w}
	if c, err := r.Cookie(cfg.CookieName); err == nil {
		s, ok, err := cfg.Manager.Load(r.Context(), c.Value)
		switch {
		case err != nil:
			st.loadErr, st.loadID = err, c.Value
			st.report(r, "load", err)
			if cfg.RefuseOnLoadError {
				cfg.Options.Respond(w, r, httpmw.Problem{Status: http.StatusServiceUnavailable,
					Message: "session store unavailable", Err: err})
				return
			}
		case ok:
			st.use(s)
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, st))
	st.r = r
	next.ServeHTTP(w, r)
	if st.dirty() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), saveTimeout)
		defer cancel()
		if err := st.save(ctx); err != nil {
			st.report(r, "save", err)
		}
	}
}

// save writes the handler's changes. If another request of the session
// saved first, the changes (the difference between the record as loaded
// and as left by the handler) are applied to the newer record.
func (st *state) save(ctx context.Context) error {
	m := st.cfg.Manager
	err := m.Save(ctx, st.sess)
	if !errors.Is(err, ErrConflict) {
		return err
	}
	var orig Record
	if st.snap == nil || m.cfg.Codec.Unmarshal(st.snap, &orig) != nil {
		return err
	}
	final := st.sess.Record
	merged, err := m.Update(ctx, st.sess.ID, func(s *Session) error {
		merge(&s.Record, &orig, &final)
		return nil
	})
	if err != nil {
		return err
	}
	// The request's session is now the merged record, at its new version
	// (a RotateID that follows compares and deletes that version).
	*st.sess = *merged
	return nil
}

// merge applies to r the changes from orig to final: every value and
// every authorization entry set, changed or deleted (entry by entry, so
// that an entry another request removed meanwhile stays removed unless
// this request changed it), and the tenant and Remember flag if they
// changed.
func merge(r, orig, final *Record) {
	r.Values = mergeMap(r.Values, orig.Values, final.Values, bytes.Equal)
	r.Auth = mergeMap(r.Auth, orig.Auth, final.Auth, func(a, b string) bool { return a == b })
	if final.Tenant != orig.Tenant {
		r.Tenant = final.Tenant
	}
	if final.Remember != orig.Remember {
		r.Remember = final.Remember
	}
}

// mergeMap applies to r the entries set, changed or deleted from orig to
// final, and returns it.
func mergeMap[V any](r, orig, final map[string]V, equal func(a, b V) bool) map[string]V {
	for k, v := range final {
		if o, ok := orig[k]; !ok || !equal(o, v) {
			if r == nil {
				r = map[string]V{}
			}
			r[k] = v
		}
	}
	for k := range orig {
		if _, ok := final[k]; !ok {
			delete(r, k)
		}
	}
	return r
}

// retryLoad loads the cookie's session again if the first load failed,
// for the helpers that must not act beside a session that may be live
// (Start, Login, Logout): it returns the store's error if it fails again.
// A record the Codec cannot decode (store.ErrCorrupt) is no live session:
// it is destroyed, so that the helper can replace the cookie.
func (st *state) retryLoad(ctx context.Context) error {
	if st.sess != nil || st.loadErr == nil {
		return nil
	}
	s, ok, err := st.cfg.Manager.Load(ctx, st.loadID)
	if errors.Is(err, store.ErrCorrupt) {
		if _, err = st.cfg.Manager.Destroy(ctx, st.loadID); err == nil {
			s, ok = nil, false
		}
	}
	if err != nil {
		return err
	}
	st.loadErr, st.loadID = nil, ""
	if ok {
		st.use(s)
	}
	return nil
}

// report logs a failed load or save with its cause, never the session ID.
func (st *state) report(r *http.Request, op string, err error) {
	st.cfg.Options.Report(r, slog.LevelError, "tide: session "+op+" failed", err, slog.String("op", op))
}

func (st *state) setCookie(s *Session) {
	c := &http.Cookie{Name: st.cfg.CookieName, Path: st.cfg.Path, Domain: st.cfg.Domain,
		Secure: !st.cfg.Insecure, HttpOnly: true, SameSite: st.cfg.SameSite}
	switch {
	case s == nil:
		c.MaxAge = -1
	case s.Remember:
		c.Value = s.ID
		left := s.Deadline.Sub(s.LastActive)
		c.MaxAge = max(int((left+time.Second-1)/time.Second), 1)
	default:
		c.Value = s.ID
	}
	// Replace a cookie this request already set.
	h := st.w.Header()
	h["Set-Cookie"] = slices.DeleteFunc(h["Set-Cookie"], func(v string) bool {
		old, err := http.ParseSetCookie(v)
		return err == nil && old.Name == c.Name
	})
	http.SetCookie(st.w, c)
	const noCache = `no-cache="Set-Cookie"`
	switch cc := h.Get("Cache-Control"); {
	case cc == "":
		h.Set("Cache-Control", noCache)
	case !strings.Contains(cc, noCache):
		h.Set("Cache-Control", cc+", "+noCache)
	}
}

func from(ctx context.Context) *state {
	st, _ := ctx.Value(ctxKey{}).(*state)
	return st
}

// FromContext returns the request's session, or nil if it has none (or the
// middleware is not installed).
func FromContext(ctx context.Context) *Session {
	if st := from(ctx); st != nil {
		return st.sess
	}
	return nil
}

// Start returns the request's session, starting an anonymous one (and
// setting its cookie) if it has none: call it before storing a visitor's
// cart, CSRF token or flash message. A session ID the client sent that
// names no session is never adopted: the new session gets a fresh ID. If
// the store failed to load the request's session, Start, Login and Logout
// load it again, and return the store's error if that fails too, rather
// than replace the cookie of a session that may well be live (Login and
// Logout could not revoke it); a record the Codec cannot decode
// (store.ErrCorrupt: no session can be loaded from it) is destroyed
// instead, and they go on without it.
func Start(ctx context.Context) (*Session, error) {
	st := from(ctx)
	if st == nil {
		return nil, ErrNoMiddleware
	}
	if err := st.retryLoad(ctx); err != nil {
		return nil, err
	}
	if st.sess != nil {
		return st.sess, nil
	}
	s, err := st.cfg.Manager.CreateAnonymous(ctx)
	if err != nil {
		return nil, err
	}
	st.use(s)
	st.setCookie(s)
	return s, nil
}

// SetValue sets a value in the request's session; the middleware saves it
// after the handler. It reports false if there is no session (Start one
// first).
func SetValue(ctx context.Context, name string, value []byte) bool {
	st := from(ctx)
	if st == nil || st.sess == nil {
		return false
	}
	st.sess.Set(name, value)
	st.changed = true
	return true
}

// DeleteValue removes a value from the request's session.
func DeleteValue(ctx context.Context, name string) bool {
	st := from(ctx)
	if st == nil || st.sess == nil {
		return false
	}
	st.sess.Delete(name)
	st.changed = true
	return true
}

// Login signs userID in: it starts a new session under a fresh ID, sets
// the cookie, and revokes the request's previous session, whose ID is
// unusable from then on (the session-fixation defence; see
// Manager.Login). The values of a previous anonymous session (a cart),
// unsaved changes included, carry over.
func Login(ctx context.Context, userID, tenant string, auth map[string]string) (*Session, error) {
	st := from(ctx)
	if st == nil {
		return nil, ErrNoMiddleware
	}
	if err := st.retryLoad(ctx); err != nil {
		return nil, err
	}
	s, err := st.cfg.Manager.Login(ctx, st.sess, userID, tenant, auth)
	if err != nil {
		return nil, err
	}
	st.use(s)
	st.setCookie(s)
	return s, nil
}

// RotateID gives the request's session a new ID (on privilege change) and
// sets the new cookie; the old ID is unusable from then on. Unsaved
// changes are saved first.
func RotateID(ctx context.Context) error {
	st := from(ctx)
	if st == nil || st.sess == nil {
		return ErrNotFound
	}
	if st.dirty() {
		if err := st.save(ctx); err != nil {
			return err
		}
	}
	if err := st.cfg.Manager.Rotate(ctx, st.sess); err != nil {
		return err
	}
	st.use(st.sess)
	st.setCookie(st.sess)
	return nil
}

// RememberMe sets whether the request's session is remembered across
// browser restarts (a persistent cookie with Max-Age, and the Manager's
// RememberIdleTimeout), and sets the cookie accordingly. The middleware
// saves the change after the handler.
func RememberMe(ctx context.Context, remember bool) error {
	st := from(ctx)
	if st == nil || st.sess == nil {
		return ErrNotFound
	}
	st.sess.Remember = remember
	st.changed = true
	st.setCookie(st.sess)
	return nil
}

// Logout revokes the request's session and clears the cookie.
func Logout(ctx context.Context) error {
	st := from(ctx)
	if st == nil {
		return ErrNoMiddleware
	}
	if err := st.retryLoad(ctx); err != nil {
		return err
	}
	if st.sess != nil {
		if _, err := st.cfg.Manager.Destroy(ctx, st.sess.ID); err != nil {
			return err
		}
	}
	st.use(nil)
	st.setCookie(nil)
	return nil
}
