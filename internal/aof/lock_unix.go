//go:build unix

package aof

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the file whose flock guards the directory. It holds no data.
const lockName = "LOCK"

// noFollow makes an open fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW

// Lock implements FS with flock(2) on dir/LOCK: released by the kernel when
// the process dies, so a crash never leaves the directory locked.
func (o *OS) Lock() (func() error, error) {
	f, err := os.OpenFile(filepath.Join(o.dir, lockName), os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, o.dir)
		}
		return nil, err
	}
	return f.Close, nil // closing the descriptor releases the lock
}
