package aof

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// SyncPolicy says when the log fsyncs, as Redis's appendfsync does.
type SyncPolicy uint8

const (
	// SyncEverySecond (the zero value, Redis's everysec) acknowledges an
	// append once the kernel has it and fsyncs in the background every
	// Config.SyncInterval.
	SyncEverySecond SyncPolicy = iota
	// SyncAlways (Redis's always) acknowledges an append only after its
	// record is durable. Concurrent appends share an fsync (group commit).
	SyncAlways
	// SyncNo (Redis's no) acknowledges an append once the kernel has it
	// and leaves flushing to the OS (and Close).
	SyncNo
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncEverySecond:
		return "everysec"
	case SyncAlways:
		return "always"
	case SyncNo:
		return "no"
	}
	return fmt.Sprintf("SyncPolicy(%d)", uint8(p))
}

// Config configures a Log. Zero fields mean defaults.
type Config struct {
	// Dir is the log's directory, created if missing. Ignored if FS is set.
	Dir string
	// FS is the file system; nil means NewOS(Dir). Tests inject faults
	// here.
	FS FS
	// Sync is the fsync policy; the zero value is SyncEverySecond.
	Sync SyncPolicy
	// SyncInterval is SyncEverySecond's period: 0 means 1 s.
	SyncInterval time.Duration
	// TruncateCorrupt makes Open cut the log at a corruption in an
	// incremental log (a bad frame with valid frames after it) instead of
	// failing with ErrCorrupt: the rest of that file and every later
	// incremental log are discarded (Recovery.Corruption and
	// DiscardedBytes say what); Recovery.MaxVersion still covers the
	// versions of the readable records discarded. Corruption in the base
	// is always an error.
	TruncateCorrupt bool
	// BaseSize, if set, is called before the base is replayed with its
	// size in bytes (a rewrite writes the live data set once, so the
	// caller may size its storage for it). Not called without a base.
	BaseSize func(bytes int64)
}

// batch is a group of records written (and, with SyncAlways, synced)
// together.
type batch struct {
	buf  []byte
	done chan struct{} // closed when the batch is written (and synced)
	lead chan struct{} // a token: the receiver flushes this batch
	err  error         // set before done is closed
}

func newBatch(buf []byte) *batch {
	return &batch{buf: buf[:0], done: make(chan struct{}), lead: make(chan struct{}, 1)}
}

// Log is an append-only log of mutation records in a directory, with
// rewrite (compaction) and recovery. Create it with Open.
//
// Algorithm: appends are framed into the current batch under mu. The first
// appender that finds no flush running becomes the leader: it takes the
// batch, writes it at the end of the active incremental log with one
// positional write and, with SyncAlways, fsyncs; appenders that arrived
// meanwhile form the next batch, and when the leader is done it hands the
// lead to one of them. So concurrent appends share writes and fsyncs (group
// commit), and every appender flushes at most one batch.
//
// Concurrency: all methods are safe for concurrent use. Append may be
// called under the caller's locks: it takes only the log's own and never
// calls back.
//
// Cost: an append encodes its record (one copy of key and value) and
// waits for one write system call (shared), plus one fsync (shared) with
// SyncAlways.
type Log struct {
	fsys     FS
	policy   SyncPolicy
	interval time.Duration

	// mu guards cur, flushing, failed, closed and the spare buffer.
	mu       sync.Mutex
	cur      *batch
	flushing bool       // a leader owns the flush
	idle     *sync.Cond // signalled when flushing becomes false
	failed   error      // sticky: wraps ErrFailed
	closed   bool
	spare    []byte

	// fileMu guards f, size and man against a switch of the active file:
	// the flush leader and the background sync hold it shared (the flush
	// is exclusive by leadership), a rewrite's switch and Close hold it
	// exclusively.
	fileMu sync.RWMutex
	f      File
	size   atomic.Int64 // end of the last complete record in f; written by the flush leader or under fileMu held exclusively
	man    manifest
	dirty  atomic.Bool // written since the last fsync; cleared under syncMu or fileMu held exclusively
	syncMu sync.Mutex  // serializes syncActive; taken before fileMu

	// fileClosed and finalErr are guarded by fileMu: Close closed f, and
	// the outcome of its final fsync (nil: every record appended is
	// durable), for a Sync that Close overtook.
	fileClosed bool
	finalErr   error

	baseSize int64 // guarded by fileMu: the base's size
	incrSize int64 // guarded by fileMu: the incremental logs' before f

	rewriteMu sync.Mutex  // held by Rewrite for its whole run; Close waits for it
	seq       uint64      // guarded by rewriteMu: the last file number used
	closing   atomic.Bool // Close has started: a running Rewrite stops

	unlock    func() error // releases the directory lock
	closeOnce sync.Once
	closeErr  error
	done      chan struct{}
	wg        sync.WaitGroup
}

// Append adds r to the log and returns once it is written (SyncEverySecond,
// SyncNo) or durable (SyncAlways). On error the record is not part of the
// log: a failed write is cut off again before the next append, or, if that
// is impossible, the log fails (ErrFailed) and refuses every later append.
// After a failed fsync the record may or may not survive a crash, and the
// log fails: the kernel may have dropped the dirty pages, so a later fsync
// that succeeds would prove nothing. Errors: ErrTooLarge, ErrInvalidRecord
// (nothing written; the log stays usable), ErrClosed, ErrFailed, and write
// errors (for example ENOSPC; the log stays usable).
func (l *Log) Append(r *Record) error {
	l.mu.Lock()
	if err := l.unusableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	b := l.cur
	var err error
	if b.buf, err = AppendFrame(b.buf, r); err != nil {
		l.mu.Unlock()
		return err
	}
	lead := !l.flushing
	if lead {
		l.flushing = true
		l.cur = newBatch(l.spare)
		l.spare = nil
	}
	l.mu.Unlock()
	if !lead {
		select {
		case <-b.done:
			return b.err
		case <-b.lead:
			l.mu.Lock()
			l.cur = newBatch(l.spare)
			l.spare = nil
			l.mu.Unlock()
		}
	}
	l.flush(b)
	l.mu.Lock()
	if len(b.buf) <= 1<<20 {
		l.spare = b.buf
	}
	if len(l.cur.buf) > 0 {
		l.cur.lead <- struct{}{}
	} else {
		l.flushing = false
		l.idle.Broadcast()
	}
	l.mu.Unlock()
	return b.err
}

// AppendSync is Append followed by Sync: the record (and every record
// before it) is durable when it returns nil, whatever the policy. The
// engine uses it for the rare records that must never be lost, such as a
// version reservation (an OpVersions record written before the counters
// pass it, so that even SyncNo never reuses a version after a crash). A
// Close that overtakes it between the append and the fsync fsyncs the
// record itself: AppendSync then returns the outcome of that fsync (nil:
// the record is durable), never ErrClosed for a record that is in the log.
func (l *Log) AppendSync(r *Record) error {
	if err := l.Append(r); err != nil {
		return err
	}
	if l.policy == SyncAlways {
		return nil
	}
	return l.syncActive()
}

func (l *Log) unusableLocked() error {
	if l.closed {
		return ErrClosed
	}
	return l.failed
}

// fail makes the log refuse appends from now on.
func (l *Log) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return l.failed
}

// flush writes b at the end of the active file, and syncs it with
// SyncAlways. Only the leader calls it.
func (l *Log) flush(b *batch) {
	defer close(b.done)
	l.fileMu.RLock()
	defer l.fileMu.RUnlock()
	l.mu.Lock()
	b.err = l.failed
	l.mu.Unlock()
	if b.err != nil {
		return
	}
	end := l.size.Load()
	n, err := l.f.WriteAt(b.buf, end)
	if err == nil && n < len(b.buf) {
		err = errShortWrite
	}
	if err != nil {
		// Cut off whatever part of the batch reached the file, so that the
		// next append starts at a frame boundary. If even that fails, a
		// later record could follow garbage: refuse appends.
		if terr := l.f.Truncate(end); terr != nil {
			b.err = l.fail(fmt.Errorf("write: %w; truncate after it: %w", err, terr))
			return
		}
		b.err = fmt.Errorf("tide: log write: %w", err)
		return
	}
	l.size.Store(end + int64(len(b.buf)))
	if l.policy != SyncAlways {
		l.dirty.Store(true)
		return
	}
	if err := l.f.Sync(); err != nil {
		b.err = l.fail(fmt.Errorf("fsync: %w", err))
	}
}

// Sync makes every record appended so far durable, whatever the policy.
// On a closed log it returns ErrClosed; one that Close overtook returns
// the outcome of Close's final fsync.
func (l *Log) Sync() error {
	l.mu.Lock()
	err := l.unusableLocked()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.syncActive()
}

// syncActive fsyncs the active file if it was written since the last
// fsync. A failure fails the log. After Close it returns the outcome of
// Close's final fsync, which covered every record appended.
func (l *Log) syncActive() error {
	// Serialize fsyncs, so that a caller finding nothing dirty knows the
	// fsync that cleared the flag has finished (and how).
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.fileMu.RLock()
	defer l.fileMu.RUnlock()
	if l.fileClosed {
		return l.finalErr
	}
	if !l.dirty.Swap(false) {
		return l.Err()
	}
	if err := l.f.Sync(); err != nil {
		return l.fail(fmt.Errorf("fsync: %w", err))
	}
	return nil
}

func (l *Log) syncLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			l.syncActive() // a failure is sticky: appends report it
		}
	}
}

// Err returns the error that failed the log (wrapping ErrFailed), or nil.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Close waits for appends in flight, stops the background fsync, fsyncs
// the log and closes it. Later appends return ErrClosed. It returns the
// failure of a failed log (ErrFailed), or of the final fsync. A running Rewrite
// is aborted (it returns ErrClosed) and waited for. Close is idempotent: it
// returns the same result every time.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.closing.Store(true)
		l.mu.Lock()
		l.closed = true
		for l.flushing {
			l.idle.Wait()
		}
		l.mu.Unlock()
		close(l.done)
		l.wg.Wait()
		l.rewriteMu.Lock() // a rewrite sees closed and stops
		defer l.rewriteMu.Unlock()
		l.fileMu.Lock()
		defer l.fileMu.Unlock()
		var err error
		if l.Err() == nil && l.dirty.Load() {
			if err = l.f.Sync(); err != nil {
				l.finalErr = fmt.Errorf("tide: log close: fsync: %w", err)
			}
		}
		if ferr := l.Err(); ferr != nil {
			l.finalErr = ferr
		}
		l.fileClosed = true
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
		if uerr := l.unlock(); err == nil {
			err = uerr
		}
		switch {
		case l.Err() != nil:
			l.closeErr = l.Err()
		case err != nil:
			l.closeErr = fmt.Errorf("tide: log close: %w", err)
		}
	})
	return l.closeErr
}

// Size returns the bytes in the base and in the incremental logs: the
// engine's cue to rewrite (for example when incr exceeds base and 64 MiB,
// as Redis's auto-aof-rewrite-percentage and min-size do).
func (l *Log) Size() (base, incr int64) {
	l.fileMu.RLock()
	defer l.fileMu.RUnlock()
	return l.baseSize, l.incrSize + l.size.Load()
}

func newCond(mu *sync.Mutex) *sync.Cond { return sync.NewCond(mu) }
