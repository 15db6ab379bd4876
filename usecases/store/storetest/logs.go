package storetest

import (
	"context"
	"log/slog"
	"sync"
)

// LogRecord is one record captured by Logs: its level, message and
// attributes (values formatted with %v).
type LogRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// Logs is a slog.Handler that keeps every record, for tests of what an
// adapter reports. It is safe for concurrent use.
type Logs struct {
	mu   sync.Mutex // guards recs
	recs []LogRecord
}

// NewLogs returns a Logs and a Logger writing to it at every level.
func NewLogs() (*Logs, *slog.Logger) {
	l := &Logs{}
	return l, slog.New(l)
}

// Records returns the records so far.
func (l *Logs) Records() []LogRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LogRecord(nil), l.recs...)
}

// Enabled implements slog.Handler: every level.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	rec := LogRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, rec)
	l.mu.Unlock()
	return nil
}

// WithAttrs implements slog.Handler; the adapters log no logger-level
// attributes, so they are dropped.
func (l *Logs) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup implements slog.Handler; groups are ignored.
func (l *Logs) WithGroup(string) slog.Handler { return l }
