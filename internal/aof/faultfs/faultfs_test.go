package faultfs

import (
	"errors"
	"syscall"
	"testing"
)

func write(t *testing.T, fs *FS, name, data string, sync bool) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

// TestCrashKeepsWhatWasSynced: synced data and synced directory entries
// survive every crash; unsynced ones survive as a prefix at most.
func TestCrashKeepsWhatWasSynced(t *testing.T) {
	for seed := range uint64(50) {
		fs := New()
		write(t, fs, "a", "synced", true)
		fs.SyncDir()
		f, _ := fs.Open("a")
		f.WriteAt([]byte("+more"), 6)
		write(t, fs, "b", "unsynced dir entry", true)
		fs.Rename("a", "c")
		after := fs.Crash(seed)
		if _, err := fs.Open("a"); !errors.Is(err, ErrCrashed) {
			t.Fatalf("old FS after Crash: Open = %v, want ErrCrashed", err)
		}
		names := after.Names()
		var data []byte
		switch {
		case contains(names, "a") && !contains(names, "c"):
			data, _ = after.Contents("a")
		case contains(names, "c") && !contains(names, "a"):
			data, _ = after.Contents("c")
			if !contains(names, "b") {
				t.Fatalf("seed %d: rename survived but the earlier create did not: %v", seed, names)
			}
		default:
			t.Fatalf("seed %d: names %v", seed, names)
		}
		full := "synced+more"
		if len(data) < 6 || string(data[:6]) != "synced" || len(data) > len(full) {
			t.Fatalf("seed %d: a = %q, want synced plus a prefix of +more", seed, data)
		}
		for i := 6; i < len(data); i++ {
			if data[i] != full[i] && data[i] != 0 {
				t.Fatalf("seed %d: a = %q has bytes never written", seed, data)
			}
		}
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestFaults: hooks fail operations, short writes write a prefix, capacity
// gives ENOSPC, CrashAfter counts mutating operations.
func TestFaults(t *testing.T) {
	fs := New()
	f, _ := fs.Create("x")
	fs.SetHook(func(op Op, name string) *Fault {
		if op == OpWrite {
			return &Fault{Err: syscall.EIO, Partial: 2}
		}
		return nil
	})
	if n, err := f.WriteAt([]byte("hello"), 0); n != 2 || !errors.Is(err, syscall.EIO) {
		t.Errorf("faulted write = %d, %v; want 2, EIO", n, err)
	}
	fs.SetHook(nil)
	fs.SetCapacity(4)
	if n, err := f.WriteAt([]byte("hello"), 0); n != 4 || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write past capacity = %d, %v; want 4, ENOSPC", n, err)
	}
	fs.SetCapacity(0)
	fs.CrashAfter(1)
	if err := f.Sync(); err != nil {
		t.Errorf("first op after CrashAfter(1) = %v", err)
	}
	if err := f.Sync(); !errors.Is(err, ErrCrashed) {
		t.Errorf("second op = %v, want ErrCrashed", err)
	}
	if !fs.Crashed() {
		t.Error("Crashed = false")
	}
}
