//go:build !unix

package aof

// Lock implements FS. Without flock(2) the directory is not locked: the
// caller must make sure one process opens it at a time.
func (o *OS) Lock() (func() error, error) { return func() error { return nil }, nil }

// noFollow is 0: this platform's opens have no O_NOFOLLOW.
const noFollow = 0
