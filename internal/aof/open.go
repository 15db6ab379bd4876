package aof

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Open opens (or creates) the log in cfg's directory and replays it: the
// base, then each incremental log in order, calling apply with every
// record as written. now is the wall-clock time in Unix nanoseconds: after
// the last record, an OpRemove with CauseExpired is delivered for every key
// the replay left with a deadline ≤ now (Recovery.Due). apply
// runs on the calling goroutine; its first error stops Open, which returns
// it. A torn tail of the last incremental log is cut off (TornBytes); any
// other invalid frame is a *CorruptError unless cfg.TruncateCorrupt.
//
// The directory is locked (ErrLocked if another open log holds it) until
// Close. Debris of interrupted steps (files the manifest does not name) is
// removed. Open starts the background fsync goroutine of SyncEverySecond;
// Close stops it.
func Open(cfg Config, now int64, apply func(*Record) error) (*Log, Recovery, error) {
	var rep Recovery
	if cfg.Sync > SyncNo {
		return nil, rep, fmt.Errorf("%w: Sync = %d", ErrInvalidConfig, cfg.Sync)
	}
	if cfg.SyncInterval < 0 {
		return nil, rep, fmt.Errorf("%w: SyncInterval = %v, want ≥ 0", ErrInvalidConfig, cfg.SyncInterval)
	}
	if cfg.SyncInterval == 0 {
		cfg.SyncInterval = time.Second
	}
	fsys := cfg.FS
	if fsys == nil {
		if cfg.Dir == "" {
			return nil, rep, fmt.Errorf("%w: Dir or FS required", ErrInvalidConfig)
		}
		o, err := NewOS(cfg.Dir)
		if err != nil {
			return nil, rep, fmt.Errorf("tide: log: %w", err)
		}
		fsys = o
	}
	unlock, err := fsys.Lock()
	if err != nil {
		return nil, rep, fmt.Errorf("tide: log: %w", err)
	}
	l, rep, err := open(cfg, fsys, now, apply)
	if err != nil {
		unlock()
		return nil, rep, err
	}
	l.unlock = unlock
	return l, rep, nil
}

func open(cfg Config, fsys FS, now int64, apply func(*Record) error) (*Log, Recovery, error) {
	var rep Recovery
	l := &Log{fsys: fsys, policy: cfg.Sync, interval: cfg.SyncInterval, done: make(chan struct{})}
	l.idle = newCond(&l.mu)
	l.cur = newBatch(nil)

	man, fresh, err := readManifest(fsys)
	if err != nil {
		return nil, rep, err
	}
	if fresh {
		man = manifest{incrs: []uint64{1}}
		if err := createIncr(fsys, 1); err != nil {
			return nil, rep, err
		}
		if err := writeManifest(fsys, man); err != nil {
			return nil, rep, err
		}
	}
	// The manifest read may be one whose rename a crashed process never
	// made durable: make it so before anything depends on it.
	if err := fsys.SyncDir(); err != nil {
		return nil, rep, fmt.Errorf("tide: log: %w", err)
	}
	l.seq = man.maxSeq()
	rp := &replayer{now: now, apply: apply, rep: &rep}
	if man.base != 0 {
		if err := rp.replayBase(fsys, baseName(man.base), cfg.BaseSize); err != nil {
			return nil, rep, err
		}
		rep.Files++
		if l.baseSize, err = fileSize(fsys, baseName(man.base)); err != nil {
			return nil, rep, err
		}
	}
	for i, seq := range man.incrs {
		name := incrName(seq)
		f, err := fsys.Open(name)
		if err != nil {
			return nil, rep, fmt.Errorf("tide: log %s: %w", name, err)
		}
		end, bad, torn, err := rp.replayIncr(f, name)
		rep.Files++
		last := i == len(man.incrs)-1
		// A torn tail is at the end of the log if the later logs hold no
		// record: a rewrite whose switch failed after its manifest rename
		// may have left one naming a new log that appends never reached.
		tail := torn && (last || headersOnly(fsys, man.incrs[i+1:]))
		if err == nil && bad != nil && !tail && !cfg.TruncateCorrupt {
			err = bad
		}
		if err != nil {
			f.Close()
			return nil, rep, err
		}
		if tail && !last {
			size, err := f.Size()
			if err == nil {
				err = cutAt(f, end)
			}
			f.Close()
			if err != nil {
				return nil, rep, fmt.Errorf("tide: log %s: cut at %d: %w", name, end, err)
			}
			rep.TornBytes += size - end
			continue
		}
		// Sync what was replayed: a process crash leaves written records
		// in the page cache, and what this recovery serves must not be
		// lost by a later power failure. An earlier log too: a switch
		// whose manifest rename happened but whose directory fsync failed
		// left appends going to the old log, unsynced, while the manifest
		// may name a newer one.
		if bad == nil && !last {
			size, err := f.Size()
			if err == nil {
				err = f.Sync()
			}
			f.Close()
			if err != nil {
				return nil, rep, fmt.Errorf("tide: log %s: %w", name, err)
			}
			l.incrSize += size
			continue
		}
		size, err := f.Size()
		if err == nil && bad != nil && !tail {
			// The records the cut discards handed out versions that
			// callers hold: keep them out of reach (best effort: a version
			// only in a damaged frame is lost with it).
			rep.MaxVersion = max(rep.MaxVersion, maxVersionIn(f, end+1, size))
			for _, s := range man.incrs[i+1:] {
				rep.MaxVersion = max(rep.MaxVersion, maxVersionInFile(fsys, incrName(s)))
			}
		}
		if err == nil && bad != nil {
			err = cutAt(f, end)
		} else if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, rep, fmt.Errorf("tide: log %s: cut at %d: %w", name, end, err)
		}
		if bad != nil {
			if tail {
				rep.TornBytes += size - end
			} else {
				rep.Corruption = bad
				rep.DiscardedBytes = size - end
				for _, s := range man.incrs[i+1:] {
					n, _ := fileSize(fsys, incrName(s)) // a missing file discards nothing
					rep.DiscardedBytes += n
				}
				man.incrs = slices.Clone(man.incrs[:i+1])
				if err := writeManifest(fsys, man); err != nil {
					f.Close()
					return nil, rep, err
				}
			}
		}
		l.f = f
		l.size.Store(max(end, fileHeader))
		break
	}
	if err := rp.expireDue(); err != nil {
		l.f.Close()
		return nil, rep, err
	}
	l.man = man
	removeDebris(fsys, man)
	if l.policy == SyncEverySecond {
		l.wg.Add(1)
		go l.syncLoop()
	}
	return l, rep, nil
}

// readManifest reads the manifest. fresh reports a directory with no log:
// no manifest and no log file with content (a first Open that crashed
// before its manifest leaves at most an incremental log holding only its
// header). Files of ours without a manifest are an error, never data to
// delete.
func readManifest(fsys FS) (m manifest, fresh bool, err error) {
	data, err := readManifestFile(fsys)
	if err == nil {
		m, err = parseManifest(data)
		return m, false, err
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		return m, false, err
	}
	if !isNotExist(err) {
		return m, false, fmt.Errorf("tide: log manifest: %w", err)
	}
	names, err := fsys.List()
	if err != nil {
		return m, false, fmt.Errorf("tide: log: %w", err)
	}
	for _, name := range names {
		if name == manifestTmp || !ownFile(name) {
			continue
		}
		if n, err := fileSize(fsys, name); err != nil || n > fileHeader {
			return m, false, &CorruptError{File: manifestName, Reason: fmt.Sprintf("missing, but %s holds data", name)}
		}
	}
	return m, true, nil
}

// readManifestFile returns the manifest's bytes: a *CorruptError, read
// no further, if there are more than maxManifestSize.
func readManifestFile(fsys FS) ([]byte, error) {
	f, err := fsys.Open(manifestName)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > maxManifestSize {
		return nil, &CorruptError{File: manifestName, Offset: maxManifestSize, Reason: fmt.Sprintf("%d bytes, limit %d", size, maxManifestSize)}
	}
	data := make([]byte, size)
	if n, err := f.ReadAt(data, 0); n < len(data) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return data, nil
}

// createIncr creates an empty incremental log: its header, synced, and the
// directory entry synced, before any manifest names it.
func createIncr(fsys FS, seq uint64) error {
	f, err := fsys.Create(incrName(seq))
	if err != nil {
		return fmt.Errorf("tide: log: %w", err)
	}
	h := appendFileHeader(nil, logMagic)
	n, err := f.WriteAt(h, 0)
	if err == nil && n < len(h) {
		err = errShortWrite
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.SyncDir()
	}
	if err != nil {
		return fmt.Errorf("tide: log %s: %w", incrName(seq), err)
	}
	return nil
}

// cutAt truncates an incremental log at end (a frame boundary) and syncs
// it; a cut inside the header rewrites the header.
func cutAt(f File, end int64) error {
	if end < fileHeader {
		h := appendFileHeader(nil, logMagic)
		if _, err := f.WriteAt(h, 0); err != nil {
			return err
		}
		end = fileHeader
	}
	if err := f.Truncate(end); err != nil {
		return err
	}
	return f.Sync()
}

// headersOnly reports whether every incremental log in seqs holds at most
// its header.
func headersOnly(fsys FS, seqs []uint64) bool {
	for _, s := range seqs {
		if n, err := fileSize(fsys, incrName(s)); err != nil || n > fileHeader {
			return false
		}
	}
	return true
}

// maxVersionInFile is maxVersionIn over a whole incremental log, 0 if it
// cannot be read.
func maxVersionInFile(fsys FS, name string) uint64 {
	f, err := fsys.Open(name)
	if err != nil {
		return 0
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0
	}
	return maxVersionIn(f, fileHeader, size)
}

func fileSize(fsys FS, name string) (int64, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Size()
}

// removeDebris removes the files of ours that m does not name. Errors are
// ignored: debris is harmless and removed at the next Open.
func removeDebris(fsys FS, m manifest) {
	names, err := fsys.List()
	if err != nil {
		return
	}
	keep := map[string]bool{manifestName: true}
	for _, n := range m.names() {
		keep[n] = true
	}
	removed := false
	for _, name := range names {
		if ownFile(name) && !keep[name] {
			removed = fsys.Remove(name) == nil || removed
		}
	}
	if removed {
		fsys.SyncDir()
	}
}
