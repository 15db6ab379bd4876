package aof

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Source is what a rewrite or a snapshot reads: the live entries and the
// version counters. The engine implements it over its shards.
type Source interface {
	// Versions returns the per-shard version counters. It is called once,
	// before Records, and (in a rewrite) after the switch to the new
	// incremental log, so that it covers every version used before.
	Versions() []uint64
	// Records calls emit with an OpSet record for each live entry and
	// returns emit's first error. It must read the entries when called
	// (in a rewrite: after the switch), never from a copy taken earlier,
	// which would miss the appends made between the copy and the switch.
	// It may iterate shard by shard and hold no lock while emit runs; emit
	// does not retain the record.
	Records(emit func(*Record) error) error
}

// Snapshot format:
//
//	header   "tide-snp", format version (uint32), CRC-32C of those 12 bytes
//	frames   one OpVersions record, then OpSet records (as in the log)
//	end      a frame whose payload is the end marker: type (7), the number
//	         of records before it (uint64), and the CRC-32C of every byte
//	         before the end frame (uint32)
//
// Nothing may follow the end frame. A snapshot without its end marker is
// incomplete (ErrTruncated); one whose count or checksum disagrees has lost
// or reordered frames (ErrCorrupt).
const endPayload = 1 + 8 + 4

// snapWriter writes a snapshot, keeping the count and running checksum.
type snapWriter struct {
	w     io.Writer
	crc   uint32
	count uint64
	n     int64
	buf   []byte
}

func (sw *snapWriter) write(p []byte) error {
	sw.crc = crc32.Update(sw.crc, castagnoli, p)
	k, err := sw.w.Write(p)
	sw.n += int64(k)
	if err == nil && k < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

func (sw *snapWriter) record(r *Record) error {
	var err error
	if sw.buf, err = AppendFrame(sw.buf[:0], r); err != nil {
		return err
	}
	sw.count++
	return sw.write(sw.buf)
}

// WriteSnapshot writes src to w in the snapshot format and returns the
// number of entries written. Only OpSet records may come from src
// (ErrInvalidRecord otherwise). w is written sequentially; wrap a file in
// a bufio.Writer, and flush and sync it after.
func WriteSnapshot(w io.Writer, src Source) (int, error) {
	sw := &snapWriter{w: w}
	if err := sw.write(appendFileHeader(nil, snapMagic)); err != nil {
		return 0, err
	}
	if err := sw.record(&Record{Op: OpVersions, Versions: src.Versions()}); err != nil {
		return 0, err
	}
	err := src.Records(func(r *Record) error {
		if r.Op != OpSet {
			return fmt.Errorf("%w: %v in a snapshot", ErrInvalidRecord, r.Op)
		}
		return sw.record(r)
	})
	if err != nil {
		return int(sw.count - 1), err
	}
	end := make([]byte, 0, endPayload)
	end = append(end, byte(opEnd))
	end = binary.LittleEndian.AppendUint64(end, sw.count)
	end = binary.LittleEndian.AppendUint32(end, sw.crc)
	sw.buf = appendRawFrame(sw.buf[:0], end)
	if err := sw.write(sw.buf); err != nil {
		return int(sw.count - 1), err
	}
	return int(sw.count - 1), nil
}

func appendRawFrame(dst, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = append(dst, payload...)
	binary.LittleEndian.PutUint32(dst[start+4:], frameCRC(dst[start:start+4], payload))
	return dst
}

// ReadSnapshot reads a snapshot from r and calls fn with each record: first
// the OpVersions record, then every OpSet, in the order written. fn's
// record aliases the reader's buffer (see Record). It returns nil only if
// the snapshot was complete and valid to its end marker, with nothing
// after it; otherwise a *CorruptError (ErrCorrupt, and ErrTruncated if r
// ended early), a read error, or fn's first error.
//
// fn sees records before the end marker is checked: a caller restoring
// from a snapshot must treat any error as "nothing restored" and discard
// what fn applied. Entries whose deadline has passed are delivered too
// (Record.Due tells them).
func ReadSnapshot(r io.Reader, fn func(*Record) error) error {
	_, err := readSnapshot(r, nil, "", -1, fn)
	return err
}

// readSnapshot is ReadSnapshot for a named file (file, size, and ra
// reading the same bytes as r by offset) or a stream (size < 0, ra nil).
// It returns the number of records delivered.
func readSnapshot(r io.Reader, ra io.ReaderAt, file string, size int64, fn func(*Record) error) (int, error) {
	var h [fileHeader]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, checkFileHeader(h[:n], snapMagic, file)
		}
		return 0, err
	}
	if err := checkFileHeader(h[:], snapMagic, file); err != nil {
		return 0, err
	}
	crc := crc32.Checksum(h[:], castagnoli)
	fr := newFrameReader(r, ra, fileHeader)
	var count uint64
	var rec Record
	for {
		off := fr.off
		limit := int64(-1)
		if size >= 0 {
			limit = size - off
		}
		p, err := fr.next(limit)
		if err != nil {
			var fe *frameError
			switch {
			case errors.Is(err, errFrameEOF):
				return int(count), &CorruptError{File: file, Offset: off, Reason: "no end marker", Truncated: true}
			case errors.As(err, &fe):
				return int(count), &CorruptError{File: file, Offset: fe.off, Reason: fe.reason, Truncated: fe.partial}
			}
			return int(count), err
		}
		if len(p) > 0 && Op(p[0]) == opEnd {
			le := binary.LittleEndian
			switch {
			case len(p) != endPayload:
				return int(count), &CorruptError{File: file, Offset: off, Reason: "bad end marker"}
			case le.Uint64(p[1:]) != count:
				return int(count), &CorruptError{File: file, Offset: off, Reason: fmt.Sprintf("end marker counts %d records, read %d", le.Uint64(p[1:]), count)}
			case le.Uint32(p[9:]) != crc:
				return int(count), &CorruptError{File: file, Offset: off, Reason: "end marker checksum mismatch"}
			}
			var one [1]byte
			if n, _ := io.ReadFull(fr.r, one[:]); n != 0 {
				return int(count), &CorruptError{File: file, Offset: fr.off, Reason: "bytes after the end marker"}
			}
			return int(count), nil
		}
		if err := decodePayload(p, &rec); err != nil {
			return int(count), &CorruptError{File: file, Offset: off, Reason: err.Error()}
		}
		if want := OpSet; count == 0 && rec.Op != OpVersions || count > 0 && rec.Op != want {
			return int(count), &CorruptError{File: file, Offset: off, Reason: fmt.Sprintf("%v record in a snapshot at position %d", rec.Op, count)}
		}
		crc = crc32.Update(crc32.Update(crc, castagnoli, fr.hdr[:]), castagnoli, p)
		count++
		if err := fn(&rec); err != nil {
			return int(count), err
		}
	}
}
