package aof

import (
	"bufio"
	"fmt"
	"io"
	"slices"
)

// RewriteStats reports a completed rewrite.
type RewriteStats struct {
	Records   int   // entries in the new base
	BaseBytes int64 // size of the new base
	Removed   int   // old files removed
}

// Rewrite compacts the log: it writes the live data src yields as a new
// base and drops the base and incremental logs it supersedes, while appends
// go on. It is Redis 7's multi-part AOF rewrite without a fork:
//
//  1. Switch: create the next incremental log (header synced, directory
//     synced), then, with appends paused, fsync the active log and make the
//     manifest name the old files plus the new log (write MANIFEST.tmp,
//     fsync, rename, fsync the directory); appends resume into the new log.
//     The pause lasts a few fsyncs, whatever the size of the data.
//  2. Base: read src (its Versions after the switch, then its records,
//     shard by shard, concurrently with appends) into base-N.tmp, fsync,
//     rename to base-N.snap, fsync the directory.
//  3. Commit: make the manifest name the new base and the incremental logs
//     from the switch on (same atomic replacement as in 1).
//  4. Remove the superseded files.
//
// A crash at any step leaves a manifest naming complete files whose replay
// gives the acknowledged state: before 3 the old base and every
// incremental log (including the new one, into which appends went); after
// it, the new base and the logs from the switch. The base may include
// writes made after the switch, which the new log also holds: replay
// applies them again, and every record is absolute (a set, a removal, a
// deadline), so the result is the same. Files of an interrupted rewrite
// are removed at the next Open.
//
// If step 1 fails, appends continue into the old log; if a later step
// fails, the log keeps its old base and the logs from the switch. Either
// way the error is returned and the log stays usable (unless an fsync of
// the active log failed: see ErrFailed). Only one rewrite runs at a time
// (ErrBusy); Close aborts a running one (ErrClosed).
func (l *Log) Rewrite(src Source) (RewriteStats, error) {
	var st RewriteStats
	if !l.rewriteMu.TryLock() {
		return st, ErrBusy
	}
	defer l.rewriteMu.Unlock()
	if err := l.usable(); err != nil {
		return st, err
	}

	// 1. Switch.
	// File numbers are never reused: a failed step may have left a
	// manifest on disk that names a file this process no longer uses.
	if l.seq > maxFileSeq-2 {
		return st, fmt.Errorf("tide: log rewrite: file numbers exhausted (the last is %d)", l.seq)
	}
	l.seq++
	seq := l.seq
	if err := createIncr(l.fsys, seq); err != nil {
		return st, err
	}
	nf, err := l.fsys.Open(incrName(seq))
	if err != nil {
		return st, fmt.Errorf("tide: log rewrite: %w", err)
	}
	if err := l.switchTo(nf, seq); err != nil {
		nf.Close()
		return st, err
	}

	// 2. Base.
	l.seq++
	base := l.seq
	st.Records, st.BaseBytes, err = l.writeBase(base, src)
	if err != nil {
		l.fsys.Remove(baseTmpName(base))
		return st, err
	}

	// 3. Commit.
	l.fileMu.RLock()
	old := l.man
	l.fileMu.RUnlock()
	i := slices.Index(old.incrs, seq)
	next := manifest{base: base, incrs: slices.Clone(old.incrs[i:])}
	if err := writeManifest(l.fsys, next); err != nil {
		// The rename may or may not have happened: both manifests name
		// existing files, so keep them all; the next rewrite or Open
		// settles it.
		return st, fmt.Errorf("tide: log rewrite: %w", err)
	}
	l.fileMu.Lock()
	l.man = next
	l.baseSize = st.BaseBytes
	l.incrSize = 0
	l.fileMu.Unlock()

	// 4. Remove what the new manifest does not name.
	keep := map[string]bool{}
	for _, n := range next.names() {
		keep[n] = true
	}
	for _, n := range old.names() {
		if !keep[n] && l.fsys.Remove(n) == nil {
			st.Removed++
		}
	}
	if st.Removed > 0 {
		l.fsys.SyncDir() // debris left by a failure is removed at Open
	}
	return st, nil
}

func (l *Log) usable() error {
	if l.closing.Load() {
		return ErrClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unusableLocked()
}

// switchTo makes nf (incremental log seq, holding only its header) the
// active file. With appends paused it syncs the active file and writes a
// manifest naming nf; on any error appends continue into the old file,
// which every manifest that may be on disk names.
func (l *Log) switchTo(nf File, seq uint64) error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return l.fail(fmt.Errorf("fsync: %w", err))
	}
	l.dirty.Store(false)
	next := manifest{base: l.man.base, incrs: append(slices.Clone(l.man.incrs), seq)}
	if err := writeManifest(l.fsys, next); err != nil {
		return fmt.Errorf("tide: log rewrite: %w", err)
	}
	old := l.f
	l.man = next
	l.incrSize += l.size.Load()
	l.f = nf
	l.size.Store(fileHeader)
	old.Close() // synced above; a close error loses nothing
	return nil
}

// writeBase writes src as base file seq: to a temporary file, synced,
// renamed, and the directory synced.
func (l *Log) writeBase(seq uint64, src Source) (int, int64, error) {
	f, err := l.fsys.Create(baseTmpName(seq))
	if err != nil {
		return 0, 0, fmt.Errorf("tide: log rewrite: %w", err)
	}
	w := &fileWriter{f: f}
	bw := bufio.NewWriterSize(w, 1<<20)
	n, err := WriteSnapshot(bw, abortable{src, l})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.fsys.Rename(baseTmpName(seq), baseName(seq))
	}
	if err == nil {
		err = l.fsys.SyncDir()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("tide: log rewrite: base: %w", err)
	}
	return n, w.off, nil
}

// abortable stops a source's iteration when the log closes.
type abortable struct {
	Source
	l *Log
}

func (a abortable) Records(emit func(*Record) error) error {
	return a.Source.Records(func(r *Record) error {
		if a.l.closing.Load() {
			return ErrClosed
		}
		return emit(r)
	})
}

// autoSyncBytes is how much a base write leaves dirty before an fsync. A
// file system that commits its journal in order (ext4's data=ordered)
// makes an append's fsync wait for every dirty page in the transaction,
// the base's included: syncing the base as it goes (as Redis's rewrite
// does) keeps that wait short.
const autoSyncBytes = 4 << 20

// fileWriter is a sequential io.Writer over a File, fsyncing every
// autoSyncBytes.
type fileWriter struct {
	f      File
	off    int64
	synced int64
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err == nil && w.off-w.synced >= autoSyncBytes {
		err = w.f.Sync()
		w.synced = w.off
	}
	return n, err
}
