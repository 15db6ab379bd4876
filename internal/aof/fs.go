package aof

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FS is the file system the log uses: the few operations it needs, so that
// tests can inject faults (short writes, ENOSPC, fsync errors) and crashes
// (package faultfs). Names are file names inside one directory, never
// paths. OS is the real implementation.
type FS interface {
	// Create creates (or truncates) name for reading and writing.
	Create(name string) (File, error)
	// Open opens name for reading and writing.
	Open(name string) (File, error)
	// Rename atomically replaces newname by oldname. It is durable only
	// after SyncDir.
	Rename(oldname, newname string) error
	// Remove deletes name. It is durable only after SyncDir.
	Remove(name string) error
	// SyncDir makes the directory's entries (creations, renames, removals)
	// durable.
	SyncDir() error
	// List returns the names in the directory.
	List() ([]string, error)
	// Lock takes the directory's exclusive lock, so that no other log
	// (in this or another process) uses it, or fails with an error
	// matching ErrLocked. The returned function releases it.
	Lock() (unlock func() error, err error)
}

// File is an open file. Writes are positional (the log tracks its own end),
// so a failed write leaves no file offset to repair.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Sync makes the file's contents durable (fsync).
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Size returns the file's current size.
	Size() (int64, error)
	Close() error
}

// OS is an FS over a real directory. Create it with NewOS. It does not
// follow a symbolic link in place of a file (O_NOFOLLOW where the platform
// has it): a link planted in the directory must not make the log read,
// truncate or write a file outside it.
type OS struct {
	dir string
}

// NewOS returns the FS of dir, creating it (and its parents) if needed,
// readable by the owner only, as are the files it creates: the log holds
// whatever the engine holds (sessions, payment records).
func NewOS(dir string) (*OS, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &OS{dir: dir}, nil
}

func (o *OS) path(name string) string { return filepath.Join(o.dir, name) }

// Create implements FS.
func (o *OS) Create(name string) (File, error) {
	f, err := os.OpenFile(o.path(name), os.O_RDWR|os.O_CREATE|os.O_TRUNC|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Open implements FS.
func (o *OS) Open(name string) (File, error) {
	f, err := os.OpenFile(o.path(name), os.O_RDWR|noFollow, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Rename implements FS.
func (o *OS) Rename(oldname, newname string) error {
	return os.Rename(o.path(oldname), o.path(newname))
}

// Remove implements FS.
func (o *OS) Remove(name string) error { return os.Remove(o.path(name)) }

// SyncDir implements FS.
func (o *OS) SyncDir() error {
	d, err := os.Open(o.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// List implements FS.
func (o *OS) List() ([]string, error) {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// isNotExist reports a missing file on any FS.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
