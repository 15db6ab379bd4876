package aof

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Recovery reports what Open found and did.
type Recovery struct {
	// Records is the number of records delivered to the callback (a batch
	// counts once; the base's entries count one each).
	Records int
	// Files is the number of files replayed (base and incremental logs).
	Files int
	// TornBytes is the size of the torn tail cut from the last incremental
	// log: the remains of writes a crash interrupted, never acknowledged
	// with SyncAlways.
	TornBytes int64
	// Corruption is the corruption Config.TruncateCorrupt cut the log at,
	// or nil. DiscardedBytes counts the bytes it discarded: the rest of
	// that file and any later incremental log.
	Corruption     *CorruptError
	DiscardedBytes int64
	// Due counts the entries whose deadline had passed at the recovery's
	// now: keys whose last record left them with a deadline ≤ now. After
	// the last record Open delivers an OpRemove with CauseExpired for each
	// (records are delivered as written, so a later TTL change can still
	// revive a key an earlier record left due).
	Due int
	// MaxVersion is the highest version in any record and version
	// high-water mark: the engine starts every shard's counter here, so
	// no version is reused whatever the shard count. With
	// Config.TruncateCorrupt it covers the readable records the cut
	// discarded too (their versions were handed out); a version found
	// only in a damaged frame cannot be recovered.
	MaxVersion uint64
	// Versions is the last per-shard high-water mark recorded, or nil.
	Versions []uint64
}

// replayer delivers records to the caller's callback as written, tracks
// the keys they leave due at now, and keeps the report.
type replayer struct {
	now   int64
	apply func(*Record) error
	rep   *Recovery
	due   map[string]uint64 // key → version (NoVersion if unknown) of keys left due
}

func (rp *replayer) deliver(r *Record) error {
	rp.rep.Records++
	switch r.Op {
	case OpVersions:
		rp.rep.Versions = append(rp.rep.Versions[:0], r.Versions...)
		for _, v := range r.Versions {
			rp.rep.MaxVersion = max(rp.rep.MaxVersion, v)
		}
	case OpBatch:
		for i := range r.Batch {
			rp.track(&r.Batch[i])
		}
	default:
		rp.track(r)
	}
	return rp.apply(r)
}

// track notes r's version and whether it leaves its key due.
func (rp *replayer) track(r *Record) {
	rp.rep.MaxVersion = max(rp.rep.MaxVersion, r.Version)
	switch {
	case r.Due(rp.now):
		v := r.Version
		if r.Op == OpMeta {
			v = rp.due[r.Key] // a meta keeps the key's version
		}
		if rp.due == nil {
			rp.due = map[string]uint64{}
		}
		rp.due[r.Key] = v
	case rp.due == nil:
	case r.Op == OpRemove:
		// A removal of another version leaves the key as it was: only
		// one of the due version (or of any version) takes it off the
		// list. If the due version is unknown (a TTL change made the key
		// due), keep it: the final unconditional removal is then
		// harmless if the key is gone, and right if it is not.
		if v, ok := rp.due[r.Key]; ok && (r.Version == NoVersion || r.Version == v && v != NoVersion) {
			delete(rp.due, r.Key)
		}
	default:
		delete(rp.due, r.Key)
	}
}

// expireDue delivers a removal for every key the replay left due.
func (rp *replayer) expireDue() error {
	rp.rep.Due = len(rp.due)
	for k, v := range rp.due {
		if err := rp.apply(&Record{Op: OpRemove, Key: k, Version: v, Cause: CauseExpired}); err != nil {
			return err
		}
	}
	rp.due = nil
	return nil
}

// replayBase reads the base snapshot. Any damage is an error: the base was
// complete and synced before the manifest named it.
func (rp *replayer) replayBase(fsys FS, name string, hint func(int64)) error {
	f, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("tide: log base: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("tide: log base: %w", err)
	}
	if hint != nil && endsWithEndFrame(f, size) {
		hint(size)
	}
	_, err = readSnapshot(io.NewSectionReader(f, 0, size), f, name, size, rp.deliver)
	return err
}

// endsWithEndFrame reports whether the last bytes of a snapshot of size
// bytes are a well-formed end frame (its checksum right; whether its count
// and checksum agree with the frames before is for the full read to tell).
// A base that does not (a truncated, sparse or damaged file) gets no size
// hint: the read fails on it without the caller sizing anything for it.
func endsWithEndFrame(r io.ReaderAt, size int64) bool {
	const n = frameHeader + endPayload
	if size < fileHeader+n {
		return false
	}
	var b [n]byte
	if _, err := r.ReadAt(b[:], size-n); err != nil {
		return false
	}
	le := binary.LittleEndian
	return le.Uint32(b[0:]) == endPayload && Op(b[frameHeader]) == opEnd &&
		le.Uint32(b[4:]) == frameCRC(b[0:4], b[frameHeader:])
}

// replayIncr reads an incremental log. It returns the offset after its
// last valid frame, and the invalid frame's error, if any, with whether it
// is a torn tail (a last frame cut short, or nothing valid after it).
func (rp *replayer) replayIncr(f File, name string) (end int64, bad *CorruptError, torn bool, err error) {
	size, err := f.Size()
	if err != nil {
		return 0, nil, false, fmt.Errorf("tide: log %s: %w", name, err)
	}
	var h [fileHeader]byte
	n, err := f.ReadAt(h[:min(size, fileHeader)], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, nil, false, fmt.Errorf("tide: log %s: %w", name, err)
	}
	if herr := checkFileHeader(h[:n], logMagic, name); herr != nil {
		var ce *CorruptError
		errors.As(herr, &ce)
		return 0, ce, false, nil
	}
	fr := newFrameReader(io.NewSectionReader(f, fileHeader, size-fileHeader), f, fileHeader)
	var rec Record
	var fe *frameError // outside the loop: errors.As makes it escape
	for {
		off := fr.off
		p, ferr := fr.next(size - off)
		if ferr == nil {
			if derr := decodePayload(p, &rec); derr != nil {
				ferr = &frameError{off: off, reason: derr.Error()}
			} else if rec.Op == opEnd {
				ferr = &frameError{off: off, reason: "end marker in a log"}
			}
		}
		switch {
		case ferr == nil:
			if err := rp.deliver(&rec); err != nil {
				return off, nil, false, err
			}
			continue
		case errors.Is(ferr, errFrameEOF):
			return off, nil, false, nil
		case !errors.As(ferr, &fe):
			return off, nil, false, fmt.Errorf("tide: log %s: %w", name, ferr)
		}
		// A frame that overruns the file and agrees with its own fields is
		// a write cut short, whatever its value holds; otherwise the tail
		// is torn only if no valid frame follows.
		torn := false
		if fe.overrun > 0 {
			torn, err = cutShort(f, off, size, fe.overrun)
		}
		if err == nil && !torn {
			torn, err = isTornTail(f, off, size)
		}
		if err != nil {
			return off, nil, false, fmt.Errorf("tide: log %s: %w", name, err)
		}
		return off, &CorruptError{File: name, Offset: off, Reason: fe.reason, Truncated: fe.partial}, torn, nil
	}
}
