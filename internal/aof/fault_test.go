package aof_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// TestAppendFault injects one fault into an append and checks the error,
// whether the log stays usable, and that recovery (after a crash) holds
// every acknowledged record and nothing half-written.
func TestAppendFault(t *testing.T) {
	tests := []struct {
		name   string
		policy aof.SyncPolicy
		fault  func(fs *faultfs.FS) // arms the fault for the next append
		wantIs error                // the append's error matches this
		usable bool                 // later appends succeed
		maybe  bool                 // the failed record may survive
	}{
		{"short write with EIO", aof.SyncAlways, hookOnce(faultfs.OpWrite, &faultfs.Fault{Err: syscall.EIO, Partial: 5}), syscall.EIO, true, false},
		{"short write without error", aof.SyncAlways, hookOnce(faultfs.OpWrite, &faultfs.Fault{Partial: 11}), nil, true, false},
		{"ENOSPC", aof.SyncAlways, func(fs *faultfs.FS) { fs.SetCapacity(used(fs) + 10) }, syscall.ENOSPC, true, false},
		{"ENOSPC everysec", aof.SyncEverySecond, func(fs *faultfs.FS) { fs.SetCapacity(used(fs) + 3) }, syscall.ENOSPC, true, false},
		{"fsync error", aof.SyncAlways, hookOnce(faultfs.OpSync, &faultfs.Fault{Err: syscall.EIO}), aof.ErrFailed, false, true},
		{"write and truncate fail", aof.SyncAlways, func(fs *faultfs.FS) {
			wrote := false
			fs.SetHook(func(op faultfs.Op, name string) *faultfs.Fault {
				switch {
				case op == faultfs.OpWrite && !wrote:
					wrote = true
					return &faultfs.Fault{Err: syscall.EIO, Partial: 9}
				case op == faultfs.OpTruncate:
					return &faultfs.Fault{Err: syscall.EIO}
				}
				return nil
			})
		}, aof.ErrFailed, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := faultfs.New()
			l, _, err := aof.Open(aof.Config{FS: fsys, Sync: tt.policy}, 0, state{}.apply)
			if err != nil {
				t.Fatal(err)
			}
			want := state{}
			for i := range 3 {
				r := set(fmt.Sprintf("before%d", i), strings.Repeat("v", 40), uint64(i+1))
				if err := l.Append(r); err != nil {
					t.Fatal(err)
				}
				want.apply(r)
			}
			tt.fault(fsys)
			failed := set("failed", strings.Repeat("x", 40), 10)
			err = l.Append(failed)
			if err == nil {
				t.Fatalf("Append with fault = nil, want an error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Append = %v, want errors.Is %v", err, tt.wantIs)
			}
			fsys.SetCapacity(0)
			after := set("after", "y", 11)
			err = l.Append(after)
			if tt.usable {
				if err != nil {
					t.Fatalf("Append after the fault = %v, want success", err)
				}
				want.apply(after)
			} else if !errors.Is(err, aof.ErrFailed) {
				t.Fatalf("Append after the fault = %v, want ErrFailed", err)
			}
			if tt.usable && tt.policy != aof.SyncAlways {
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			for seed := range uint64(8) {
				got := state{}
				l2, rep, err := aof.Open(aof.Config{FS: fsys.Crash(seed)}, 0, got.apply)
				if err != nil {
					t.Fatalf("reopen after crash (seed %d): %v", seed, err)
				}
				l2.Close()
				if _, ok := got["failed"]; ok && tt.maybe {
					delete(got, "failed")
				}
				got.equal(t, want)
				_ = rep
			}
		})
	}
}

// hookOnce arms a fault for the next op of kind op.
func hookOnce(op faultfs.Op, f *faultfs.Fault) func(*faultfs.FS) {
	return func(fs *faultfs.FS) {
		fired := false
		fs.SetHook(func(o faultfs.Op, name string) *faultfs.Fault {
			if o != op || fired {
				return nil
			}
			fired = true
			return f
		})
	}
}

func used(fs *faultfs.FS) int64 {
	var n int64
	for _, name := range fs.Names() {
		b, _ := fs.Contents(name)
		n += int64(len(b))
	}
	return n
}

// TestFailedLogRefusesUntilReopened: after an fsync error nothing more is
// appended, Sync and Rewrite report the failure too, and reopening clears
// it.
func TestFailedLogRefusesUntilReopened(t *testing.T) {
	fsys := faultfs.New()
	l, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	hookOnce(faultfs.OpSync, &faultfs.Fault{Err: syscall.EIO})(fsys)
	if err := l.Append(set("a", "1", 1)); !errors.Is(err, aof.ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append = %v, want ErrFailed wrapping EIO", err)
	}
	if err := l.Append(set("b", "2", 2)); !errors.Is(err, aof.ErrFailed) {
		t.Errorf("second Append = %v, want ErrFailed", err)
	}
	if err := l.Sync(); !errors.Is(err, aof.ErrFailed) {
		t.Errorf("Sync = %v, want ErrFailed", err)
	}
	if _, err := l.Rewrite(stateSource{st: state{}}); !errors.Is(err, aof.ErrFailed) {
		t.Errorf("Rewrite = %v, want ErrFailed", err)
	}
	if !errors.Is(l.Err(), aof.ErrFailed) {
		t.Errorf("Err = %v, want ErrFailed", l.Err())
	}
	l.Close()
	l2, _, err := aof.Open(aof.Config{FS: fsys, Sync: aof.SyncAlways}, 0, state{}.apply)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := l2.Append(set("c", "3", 3)); err != nil {
		t.Errorf("Append after reopen = %v", err)
	}
}
