// Package faultfs is an in-memory aof.FS for tests that injects faults and
// simulates crashes. It models what survives a crash the way a careful
// reading of POSIX allows, not the way a kind file system behaves:
//
//   - A file's contents survive up to its last Sync. Bytes appended since
//     survive as a random prefix, possibly followed by zeros (a torn write
//     on a file system that extended the size first); a file truncated or
//     overwritten below its synced length since comes back either synced
//     or as it was.
//   - Directory operations (create, rename, remove) survive up to the last
//     SyncDir, then as a random prefix of those made since, in order.
//
// Faults: SetHook fails any operation, optionally after a partial write;
// SetCapacity makes writes past it short with ENOSPC; CrashAfter kills the
// file system after a number of mutating operations, after which every
// operation fails with ErrCrashed until Crash returns the file system a
// restarted process would see.
//
// An FS is safe for concurrent use.
package faultfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"

	"github.com/tidekv/tide/internal/aof"
)

// Op names a file-system operation, for Hook.
type Op uint8

// Operations.
const (
	OpCreate Op = iota + 1
	OpOpen
	OpReadFile
	OpRename
	OpRemove
	OpSyncDir
	OpList
	OpRead
	OpWrite
	OpSync
	OpTruncate
	OpSize
	OpClose
)

var opNames = [...]string{"", "create", "open", "readfile", "rename", "remove", "syncdir", "list", "read", "write", "sync", "truncate", "size", "close"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// mutating reports whether o changes what could survive a crash.
func (o Op) mutating() bool {
	switch o {
	case OpCreate, OpRename, OpRemove, OpSyncDir, OpWrite, OpSync, OpTruncate:
		return true
	}
	return false
}

// ErrCrashed is returned by every operation after the simulated crash.
var ErrCrashed = errors.New("faultfs: crashed")

// Fault is an injected failure: the operation fails with Err after, for a
// write, writing Partial bytes (a short write; Err nil makes it short
// without an error).
type Fault struct {
	Err     error
	Partial int
}

type inode struct {
	data   []byte
	synced []byte
}

type dirOp struct {
	op       Op
	old, new string
	ino      *inode
}

// FS is the in-memory file system. Create it with New.
type FS struct {
	mu      sync.Mutex // guards every field and every inode
	names   map[string]*inode
	durable map[string]*inode
	pending []dirOp

	hook     func(op Op, name string) *Fault
	capacity int64

	locked     bool
	crashAfter int // mutating operations left before the crash; < 0: none
	crashed    bool
	ops        int // mutating operations so far
}

// New returns an empty file system.
func New() *FS {
	return &FS{names: map[string]*inode{}, durable: map[string]*inode{}, crashAfter: -1}
}

// SetHook sets a function called before each operation (under the FS's
// lock: it must not call the FS); a non-nil Fault fails the operation. nil
// removes the hook.
func (f *FS) SetHook(hook func(op Op, name string) *Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = hook
}

// SetCapacity bounds the total bytes of live files: a write past it
// writes what fits and fails with syscall.ENOSPC. 0 means no bound.
func (f *FS) SetCapacity(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.capacity = n
}

// CrashAfter makes the file system crash after n more mutating operations
// (create, rename, remove, syncdir, write, sync, truncate) have happened:
// the (n+1)th and every later operation fail with ErrCrashed.
func (f *FS) CrashAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAfter = n
}

// Crashed reports whether the file system has crashed.
func (f *FS) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// Ops returns the number of mutating operations so far.
func (f *FS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// Crash kills the file system (every later operation on it fails with
// ErrCrashed) and returns what a restarted process finds: the durable
// state and a random part of what was not yet durable, chosen by seed.
func (f *FS) Crash(seed uint64) *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashed = true
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dir := map[string]*inode{}
	for n, ino := range f.durable {
		dir[n] = ino
	}
	for _, op := range f.pending[:rng.IntN(len(f.pending)+1)] {
		applyDirOp(dir, op)
	}
	out := New()
	survived := map[*inode]*inode{}
	for _, n := range slices.Sorted(maps.Keys(dir)) {
		ino := dir[n]
		c, ok := survived[ino]
		if !ok {
			c = &inode{data: crashData(ino, rng)}
			c.synced = slices.Clone(c.data)
			survived[ino] = c
		}
		out.names[n] = c
		out.durable[n] = c
	}
	return out
}

func crashData(ino *inode, rng *rand.Rand) []byte {
	s, d := ino.synced, ino.data
	if len(d) >= len(s) && bytes.Equal(d[:len(s)], s) {
		k := len(s) + rng.IntN(len(d)-len(s)+1)
		out := slices.Clone(d[:k])
		if rng.IntN(4) == 0 && k > len(s) {
			z := len(s) + rng.IntN(k-len(s)+1)
			clear(out[z:]) // size extended, data never written
		}
		return out
	}
	if rng.IntN(2) == 0 {
		return slices.Clone(s)
	}
	return slices.Clone(d)
}

func applyDirOp(dir map[string]*inode, op dirOp) {
	switch op.op {
	case OpCreate:
		dir[op.new] = op.ino
	case OpRename:
		if ino, ok := dir[op.old]; ok {
			dir[op.new] = ino
			delete(dir, op.old)
		}
	case OpRemove:
		delete(dir, op.new)
	}
}

// enter runs the crash countdown and the hook for op.
func (f *FS) enterLocked(op Op, name string) *Fault {
	if f.crashed {
		return &Fault{Err: ErrCrashed}
	}
	if op.mutating() {
		if f.crashAfter == 0 {
			f.crashed = true
			return &Fault{Err: ErrCrashed}
		}
		if f.crashAfter > 0 {
			f.crashAfter--
		}
		f.ops++
	}
	if f.hook != nil {
		return f.hook(op, name)
	}
	return nil
}

func pathErr(op Op, name string, err error) error {
	return &fs.PathError{Op: op.String(), Path: name, Err: err}
}

// Create implements aof.FS.
func (f *FS) Create(name string) (aof.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft := f.enterLocked(OpCreate, name); ft != nil {
		return nil, pathErr(OpCreate, name, ft.Err)
	}
	if ino, ok := f.names[name]; ok {
		ino.data = ino.data[:0:0]
		return &file{fs: f, ino: ino, name: name}, nil
	}
	ino := &inode{}
	f.names[name] = ino
	f.pending = append(f.pending, dirOp{op: OpCreate, new: name, ino: ino})
	return &file{fs: f, ino: ino, name: name}, nil
}

// Open implements aof.FS.
func (f *FS) Open(name string) (aof.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft := f.enterLocked(OpOpen, name); ft != nil {
		return nil, pathErr(OpOpen, name, ft.Err)
	}
	ino, ok := f.names[name]
	if !ok {
		return nil, pathErr(OpOpen, name, fs.ErrNotExist)
	}
	return &file{fs: f, ino: ino, name: name}, nil
}

// ReadFile returns a copy of name's data (an OpReadFile, through the hook).
func (f *FS) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft := f.enterLocked(OpReadFile, name); ft != nil {
		return nil, pathErr(OpReadFile, name, ft.Err)
	}
	ino, ok := f.names[name]
	if !ok {
		return nil, pathErr(OpReadFile, name, fs.ErrNotExist)
	}
	return slices.Clone(ino.data), nil
}

// Rename implements aof.FS.
func (f *FS) Rename(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft := f.enterLocked(OpRename, oldname); ft != nil {
		return pathErr(OpRename, oldname, ft.Err)
	}
	ino, ok := f.names[oldname]
	if !ok {
		return pathErr(OpRename, oldname, fs.ErrNotExist)
	}
	f.names[newname] = ino
	delete(f.names, oldname)
	f.pending = append(f.pending, dirOp{op: OpRename, old: oldname, new: newname})
	return nil
}

// Remove implements aof.FS.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft := f.enterLocked(OpRemove, name); ft != nil {
		return pathErr(OpRemove, name, ft.Err)
	}
	if _, ok := f.names[name]; !ok {
		return pathErr(OpRemove, name, fs.ErrNotExist)
	}
	delete(f.names, name)
	f.pending = append(f.pending, dirOp{op: OpRemove, new: name})
	return nil
}

// SyncDir implements aof.FS.
func (f *FS) SyncDir() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft := f.enterLocked(OpSyncDir, ""); ft != nil {
		return pathErr(OpSyncDir, ".", ft.Err)
	}
	for _, op := range f.pending {
		applyDirOp(f.durable, op)
	}
	f.pending = nil
	return nil
}

// List implements aof.FS.
func (f *FS) List() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft := f.enterLocked(OpList, ""); ft != nil {
		return nil, pathErr(OpList, ".", ft.Err)
	}
	names := make([]string, 0, len(f.names))
	for n := range f.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// Lock implements aof.FS: one holder at a time, released by the returned
// function or by a crash (Crash returns an unlocked file system).
func (f *FS) Lock() (func() error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locked {
		return nil, aof.ErrLocked
	}
	f.locked = true
	return func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.locked = false
		return nil
	}, nil
}

// Names returns the directory's current names (no hook, no crash check).
func (f *FS) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.names))
	for n := range f.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Contents returns a copy of name's current data (no hook, no crash check).
func (f *FS) Contents(name string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ino, ok := f.names[name]
	if !ok {
		return nil, false
	}
	return slices.Clone(ino.data), true
}

// SetContents replaces name's data, synced (no hook): tests corrupt files
// with it.
func (f *FS) SetContents(name string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ino, ok := f.names[name]
	if !ok {
		ino = &inode{}
		f.names[name] = ino
		f.durable[name] = ino
	}
	ino.data = slices.Clone(data)
	ino.synced = slices.Clone(data)
}

func (f *FS) usedLocked() int64 {
	var n int64
	seen := map[*inode]bool{}
	for _, ino := range f.names {
		if !seen[ino] {
			seen[ino] = true
			n += int64(len(ino.data))
		}
	}
	return n
}

type file struct {
	fs     *FS
	ino    *inode
	name   string
	closed bool
}

func (h *file) enter(op Op) *Fault {
	if h.closed {
		return &Fault{Err: fs.ErrClosed}
	}
	return h.fs.enterLocked(op, h.name)
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if ft := h.enter(OpRead); ft != nil {
		return 0, pathErr(OpRead, h.name, ft.Err)
	}
	if off >= int64(len(h.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *file) WriteAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	want := len(p)
	var ferr error
	if ft := h.enter(OpWrite); ft != nil {
		if errors.Is(ft.Err, ErrCrashed) {
			return 0, pathErr(OpWrite, h.name, ft.Err)
		}
		p = p[:min(max(ft.Partial, 0), len(p))]
		ferr = ft.Err
		if ferr == nil && len(p) == want {
			ferr = io.ErrShortWrite
		}
	}
	if c := h.fs.capacity; c > 0 {
		if grow := off + int64(len(p)) - int64(len(h.ino.data)); grow > 0 {
			if room := c - h.fs.usedLocked(); grow > room {
				p = p[:max(0, int64(len(p))-(grow-max(room, 0)))]
				ferr = syscall.ENOSPC
			}
		}
	}
	if end := off + int64(len(p)); end > int64(len(h.ino.data)) {
		h.ino.data = append(h.ino.data, make([]byte, end-int64(len(h.ino.data)))...)
	}
	copy(h.ino.data[off:], p)
	if ferr != nil {
		return len(p), pathErr(OpWrite, h.name, ferr)
	}
	return len(p), nil
}

func (h *file) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if ft := h.enter(OpSync); ft != nil {
		return pathErr(OpSync, h.name, ft.Err)
	}
	h.ino.synced = slices.Clone(h.ino.data)
	return nil
}

func (h *file) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if ft := h.enter(OpTruncate); ft != nil {
		return pathErr(OpTruncate, h.name, ft.Err)
	}
	if size < 0 {
		return pathErr(OpTruncate, h.name, fs.ErrInvalid)
	}
	if size <= int64(len(h.ino.data)) {
		h.ino.data = h.ino.data[:size:size]
	} else {
		h.ino.data = append(h.ino.data, make([]byte, size-int64(len(h.ino.data)))...)
	}
	return nil
}

func (h *file) Size() (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if ft := h.enter(OpSize); ft != nil {
		return 0, pathErr(OpSize, h.name, ft.Err)
	}
	return int64(len(h.ino.data)), nil
}

func (h *file) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return pathErr(OpClose, h.name, fs.ErrClosed)
	}
	h.closed = true
	return nil
}
