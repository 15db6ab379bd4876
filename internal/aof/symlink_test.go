package aof_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tidekv/tide/internal/aof"
)

// TestSymlinksAreNotFollowed: a file with one of the log's names that is
// a symbolic link (planted in the directory) must not make the log write,
// truncate or replace a file outside the directory.
func TestSymlinksAreNotFollowed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	outside := func(t *testing.T, content []byte) string {
		p := filepath.Join(t.TempDir(), "precious")
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	intact := func(t *testing.T, p string, want []byte) {
		t.Helper()
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("the file outside the directory became %d bytes (%v), want its %d bytes intact", len(got), err, len(want))
		}
	}
	t.Run("a rewrite's temporary base", func(t *testing.T) {
		dir := t.TempDir()
		l, _, err := aof.Open(aof.Config{Dir: dir, Sync: aof.SyncAlways}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		want := []byte("not the log's")
		p := outside(t, want)
		// A fresh log's first rewrite switches to log 2 and writes base 3.
		if err := os.Symlink(p, filepath.Join(dir, "base-0000000003.tmp")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Rewrite(stateSource{st: state{"a": *set("a", "1", 1)}}); err == nil {
			t.Error("Rewrite through a planted link = nil, want an error")
		}
		intact(t, p, want)
	})
	t.Run("an incremental log with a torn tail", func(t *testing.T) {
		dir := t.TempDir()
		l, _, err := aof.Open(aof.Config{Dir: dir, Sync: aof.SyncAlways}, 0, state{}.apply)
		if err != nil {
			t.Fatal(err)
		}
		l.Append(set("a", "1", 1))
		l.Close()
		name := filepath.Join(dir, firstIncr)
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, 1, 2, 3) // a torn tail Open would cut
		p := outside(t, want)
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, name); err != nil {
			t.Fatal(err)
		}
		if l, _, err := aof.Open(aof.Config{Dir: dir}, 0, state{}.apply); err == nil {
			l.Close()
			t.Error("Open through a planted link = nil, want an error")
		}
		intact(t, p, want)
	})
}
