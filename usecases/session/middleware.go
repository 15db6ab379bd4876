package session

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"
)

// HTTPConfig configures Middleware. Zero fields mean defaults.
type HTTPConfig struct {
	// Manager manages the sessions. Required.
	Manager *Manager
	// CookieName is the session cookie's name. "" means "tide_session".
	CookieName string
	// Path and Domain scope the cookie. Path "" means "/".
	Path, Domain string
	// Insecure drops the Secure attribute (for plain-HTTP development
	// only). By default the cookie is Secure.
	Insecure bool
	// SameSite is the cookie's SameSite mode. 0 means Lax.
	SameSite http.SameSite
	// OnError, if set, is told about store errors (the request proceeds
	// without a session on a failed load; a failed save is not visible to
	// the client, whose response is already written). nil means they are
	// logged with slog.Default.
	OnError func(r *http.Request, err error)
}

// saveTimeout bounds the save after the handler, which runs with a context
// the client cannot cancel.
const saveTimeout = 10 * time.Second

type ctxKey struct{}

// state is what the middleware puts in the request context.
type state struct {
	cfg     *HTTPConfig
	w       http.ResponseWriter
	r       *http.Request
	sess    *Session
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

// Middleware loads the session named by the request's cookie into the
// request context (FromContext), runs next, and saves the session if the
// handler changed it, by any means: SetValue/DeleteValue, or
// FromContext(ctx).Set and direct edits of the Session's Record (the
// record is compared with its encoding as loaded). The save runs with a
// context the client cannot cancel (a client that disconnects does not
// lose the session's changes), bounded by ten seconds; a failed save is
// reported to OnError. Login, Logout and
// RotateID, called from the handler, set or clear the cookie; they must be
// called before the handler writes its response. The cookie is HttpOnly,
// Secure (unless Insecure) and SameSite=Lax by default; it is a session
// cookie (no Max-Age): the store's TTL is the authority on expiry.
func Middleware(cfg HTTPConfig, next http.Handler) http.Handler {
	if cfg.CookieName == "" {
		cfg.CookieName = "tide_session"
	}
	if cfg.Path == "" {
		cfg.Path = "/"
	}
	if cfg.SameSite == 0 {
		cfg.SameSite = http.SameSiteLaxMode
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cfg.Manager == nil {
			http.Error(w, "session manager not configured", http.StatusInternalServerError)
			return
		}
		st := &state{cfg: &cfg, w: w}
		if c, err := r.Cookie(cfg.CookieName); err == nil {
			s, ok, err := cfg.Manager.Load(r.Context(), c.Value)
			switch {
			case err != nil:
				st.report(r, err)
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
			if err := cfg.Manager.Save(ctx, st.sess); err != nil {
				st.report(r, err)
			}
		}
	})
}

func (st *state) report(r *http.Request, err error) {
	if st.cfg.OnError != nil {
		st.cfg.OnError(r, err)
		return
	}
	slog.Default().Error("tide: session store error", "method", r.Method, "path", r.URL.Path, "err", err)
}

func (st *state) setCookie(value string, remove bool) {
	c := &http.Cookie{Name: st.cfg.CookieName, Value: value, Path: st.cfg.Path, Domain: st.cfg.Domain,
		Secure: !st.cfg.Insecure, HttpOnly: true, SameSite: st.cfg.SameSite}
	if remove {
		c.MaxAge = -1
	}
	// Replace a cookie this request already set.
	h := st.w.Header()
	h["Set-Cookie"] = slices.DeleteFunc(h["Set-Cookie"], func(v string) bool {
		old, err := http.ParseSetCookie(v)
		return err == nil && old.Name == c.Name
	})
	http.SetCookie(st.w, c)
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

// SetValue sets a value in the request's session; the middleware saves it
// after the handler. It reports false if there is no session.
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

// Login starts a new session for userID (revoking the request's previous
// session, if any: a fresh ID on every login prevents session fixation)
// and sets the cookie.
func Login(ctx context.Context, userID, tenant string, auth map[string]string) (*Session, error) {
	st := from(ctx)
	if st == nil {
		return nil, ErrInvalidConfig
	}
	if st.sess != nil {
		if _, err := st.cfg.Manager.Destroy(ctx, st.sess.ID); err != nil {
			return nil, err
		}
		st.sess = nil
	}
	s, err := st.cfg.Manager.Create(ctx, userID, tenant, auth)
	if err != nil {
		return nil, err
	}
	st.use(s)
	st.setCookie(s.ID, false)
	return s, nil
}

// RotateID gives the request's session a new ID (on privilege change) and
// sets the new cookie. Unsaved changes are saved first.
func RotateID(ctx context.Context) error {
	st := from(ctx)
	if st == nil || st.sess == nil {
		return ErrNotFound
	}
	if st.dirty() {
		if err := st.cfg.Manager.Save(ctx, st.sess); err != nil {
			return err
		}
	}
	if err := st.cfg.Manager.Rotate(ctx, st.sess); err != nil {
		return err
	}
	st.use(st.sess)
	st.setCookie(st.sess.ID, false)
	return nil
}

// Logout revokes the request's session and clears the cookie.
func Logout(ctx context.Context) error {
	st := from(ctx)
	if st == nil {
		return ErrInvalidConfig
	}
	if st.sess != nil {
		if _, err := st.cfg.Manager.Destroy(ctx, st.sess.ID); err != nil {
			return err
		}
	}
	st.use(nil)
	st.setCookie("", true)
	return nil
}
