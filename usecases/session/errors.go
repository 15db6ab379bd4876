package session

import "errors"

var (
	// ErrInvalidConfig reports a Config field with a nonsense value.
	ErrInvalidConfig = errors.New("tide: invalid session config")
	// ErrConflict reports a Save (or Rotate) of a session that changed in
	// the store since it was loaded: reload, reapply, save again (Update
	// does this). No update is ever silently lost.
	ErrConflict = errors.New("tide: session changed concurrently")
	// ErrNotFound reports a Save, Touch or Rotate of a session that no
	// longer exists (expired, revoked, evicted).
	ErrNotFound = errors.New("tide: session not found")
	// ErrNoMiddleware reports a context helper (Start, Login, Logout)
	// called on a request that did not pass through the middleware.
	ErrNoMiddleware = errors.New("tide: session middleware not installed")
	// ErrInvalidUser reports an empty user ID, or a Save or Rotate of a
	// session whose UserID was changed.
	ErrInvalidUser = errors.New("tide: invalid session user")
	// ErrFixedField reports a Save, Update or Rotate of a session whose ID,
	// Created or Deadline was changed: a Session writes only its own
	// record, and the absolute deadline never moves.
	ErrFixedField = errors.New("tide: a session's ID, creation time and deadline are fixed")
	// ErrTooManySessions reports a sign-in for a user whose index is full
	// (Config.MaxUserSessions) of sessions still being created, which
	// cannot be revoked to make room: retry later.
	ErrTooManySessions = errors.New("tide: too many sessions for one user")
)
