// Package report is how the use-case adapters report a failure they
// decide around (a store that failed and was bypassed, a completion that
// was ignored) or that their caller may not see: a record on an optional
// *slog.Logger and a call of an optional hook, both with a key safe to
// log.
package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/netip"
)

// Reporter holds an adapter's Logger and OnError settings. Its zero value
// reports nothing. It is safe for concurrent use if its hook is.
type Reporter struct {
	// Logger receives the records; nil means none.
	Logger *slog.Logger
	// OnError is called after the record is logged; nil means not called.
	OnError func(ctx context.Context, key string, err error)
}

// Report logs msg at level with the attributes "key" (as given: the
// caller passes a form safe to log, see Key), "err", then attrs, and calls
// OnError. A nil err is not reported.
func (r Reporter) Report(ctx context.Context, level slog.Level, msg, key string, err error, attrs ...slog.Attr) {
	if err == nil {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if r.Logger != nil && r.Logger.Enabled(ctx, level) {
		all := make([]slog.Attr, 0, 2+len(attrs))
		all = append(all, slog.String("key", key), slog.Any("err", err))
		r.Logger.LogAttrs(ctx, level, msg, append(all, attrs...)...)
	}
	if r.OnError != nil {
		r.OnError(ctx, key, err)
	}
}

// Key returns a caller's key in a form safe to log: an IP address or
// prefix as it is (the usual rate-limit key), anything else — it may be a
// token — as "sha256:" and the first 8 bytes of its SHA-256 in hex, so
// that records of one key still correlate.
func Key(key string) string {
	if _, err := netip.ParseAddr(key); err == nil {
		return key
	}
	if _, err := netip.ParsePrefix(key); err == nil {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:8])
}
