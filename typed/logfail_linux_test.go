package typed_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/tidekv/tide/cas"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/typed"
)

// withFileSizeLimit runs fn with the process's file size limit
// (RLIMIT_FSIZE) set to limit bytes: a write that would grow a file past
// it fails with EFBIG (the Go runtime ignores SIGXFSZ), as a full disk
// fails with ENOSPC. The limit is process-wide, so no test here runs in
// parallel.
func withFileSizeLimit(t *testing.T, limit uint64, fn func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	lim := old
	lim.Cur = limit
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatalf("restoring RLIMIT_FSIZE: %v", err)
		}
	}()
	fn()
}

// TestGetAndDeleteReportsLogFailure: when the durability log cannot take
// the delete's record, GetAndDelete must say so (an error wrapping
// engine.ErrLogWrite, as engine.DeleteWith reports it) and leave the key;
// it must not retry as if it lost races and then blame contention with
// cas.ErrConflict, which no other writer caused.
func TestGetAndDeleteReportsLogFailure(t *testing.T) {
	e, err := engine.New(engine.Config{ExpiryInterval: -1, Shards: 1,
		Durability: engine.Durability{Dir: t.TempDir(), Sync: engine.SyncNo, RewritePercent: engine.NoAutoRewrite}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m := newMap(t, e, typed.Config[string]{})
	if _, err := m.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	withFileSizeLimit(t, 0, func() {
		tests := []struct {
			name string
			op   func() error
		}{
			{"GetAndDelete", func() error { _, _, err := m.GetAndDelete("k"); return err }},
			{"Set", func() error { _, err := m.Set("k", "w"); return err }},
			{"Update", func() error {
				_, _, err := m.Update("k", func(string, bool) (string, error) { return "w", nil }, cas.Options{TTL: engine.NoTTL})
				return err
			}},
		}
		for _, tt := range tests {
			err := tt.op()
			if !errors.Is(err, engine.ErrLogWrite) || errors.Is(err, cas.ErrConflict) {
				t.Errorf("%s with a failing log: got error %v, want one wrapping engine.ErrLogWrite", tt.name, err)
			}
		}
	})
	if v, ok, err := m.Get("k"); v != "v" || !ok || err != nil {
		t.Errorf("after the failed writes Get = %q, %v, %v; want \"v\", true, nil", v, ok, err)
	}
}
