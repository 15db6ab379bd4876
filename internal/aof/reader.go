package aof

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// Reading damaged input allocates in proportion to what is read, never to
// what a length field claims nor to the size of a file:
//
//   - frameReader rejects a length above MaxRecordSize or above the bytes
//     left in a file before reading; over a file (a base, an incremental
//     log) it verifies the checksum of a frame longer than scanChunk in
//     scanChunk pieces before it reads the payload into memory, so only a
//     frame with a valid checksum (whose bytes are all there) is ever
//     held whole; over a stream it grows its buffer only as bytes arrive
//     (at most about twice the bytes read).
//   - The scans past a damaged frame (isTornTail, maxVersionIn) read the
//     file through a window of scanChunk bytes, and hold a frame whole only
//     once its checksum, computed in pieces, matches.
//
// scanChunk is that window's and those pieces' size.
const scanChunk = 256 << 10

// frameReader reads frames from a stream. It never allocates more than
// about twice the bytes actually present, whatever length a (hostile)
// header claims; over a file (ra set) it allocates a frame's length only
// once the frame's checksum matches.
type frameReader struct {
	r     *bufio.Reader
	ra    io.ReaderAt // the same bytes by offset, or nil for a stream
	off   int64       // offset of the next frame
	buf   []byte
	chunk []byte            // ra's checksum pieces
	hdr   [frameHeader]byte // the last frame's header
}

// newFrameReader reads frames from r, whose first byte is at offset off.
// ra, if not nil, reads the same bytes by offset (a file): long frames
// are then checksummed before they are read into memory.
func newFrameReader(r io.Reader, ra io.ReaderAt, off int64) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 1<<16), ra: ra, off: off}
}

// errFrameEOF is next's clean end: no byte left at a frame boundary.
var errFrameEOF = errors.New("end of frames")

// frameError describes an invalid frame at off. partial reports that the
// input ended inside the frame.
type frameError struct {
	off     int64
	reason  string
	partial bool
	overrun int64 // the payload length of a frame that overruns the input, or 0
}

func (e *frameError) Error() string { return e.reason }

// next returns the next frame's payload (valid until the following call).
// limit, if ≥ 0, is the number of bytes left in the input, so that a length
// that overruns it is reported without reading.
func (fr *frameReader) next(limit int64) ([]byte, error) {
	h := &fr.hdr
	n, err := io.ReadFull(fr.r, h[:])
	switch {
	case err == io.EOF:
		return nil, errFrameEOF
	case err == io.ErrUnexpectedEOF:
		return nil, &frameError{off: fr.off, reason: fmt.Sprintf("input ends %d bytes into a frame header", n), partial: true}
	case err != nil:
		return nil, err
	}
	length := binary.LittleEndian.Uint32(h[:4])
	if length == 0 || uint64(length) > MaxRecordSize {
		return nil, &frameError{off: fr.off, reason: fmt.Sprintf("frame length %d", length)}
	}
	if limit >= 0 && int64(length) > limit-frameHeader {
		return nil, &frameError{off: fr.off, reason: fmt.Sprintf("frame of %d bytes overruns the input", length), partial: true, overrun: int64(length)}
	}
	if fr.ra != nil && length > scanChunk {
		if fr.chunk == nil {
			fr.chunk = make([]byte, scanChunk)
		}
		crc, err := payloadCRC(fr.ra, h[:4], fr.off+frameHeader, int64(length), fr.chunk)
		switch {
		case err == io.ErrUnexpectedEOF:
			return nil, &frameError{off: fr.off, reason: fmt.Sprintf("input ends inside a frame of %d bytes", length), partial: true}
		case err != nil:
			return nil, err
		case crc != binary.LittleEndian.Uint32(h[4:]):
			return nil, &frameError{off: fr.off, reason: "frame checksum mismatch"}
		}
	}
	p, err := readN(fr.r, fr.buf[:0], int(length))
	fr.buf = p
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, &frameError{off: fr.off, reason: fmt.Sprintf("input ends inside a frame of %d bytes", length), partial: true}
		}
		return nil, err
	}
	if frameCRC(h[:4], p) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, &frameError{off: fr.off, reason: "frame checksum mismatch"}
	}
	fr.off += frameHeader + int64(length)
	return p, nil
}

// readN reads exactly n bytes into buf (reusing its capacity), growing the
// buffer only as data arrives.
func readN(r io.Reader, buf []byte, n int) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < n {
		step := min(n-len(buf), max(len(buf), 1<<20))
		buf = slices.Grow(buf, step)
		k, err := io.ReadFull(r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+k]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// payloadCRC returns the frame checksum of length field lf and the n
// payload bytes at off in r, read in pieces of len(buf) bytes. A file that
// ends before off+n is io.ErrUnexpectedEOF.
func payloadCRC(r io.ReaderAt, lf []byte, off, n int64, buf []byte) (uint32, error) {
	crc := crc32.Checksum(lf, castagnoli)
	for n > 0 {
		b := buf[:min(n, int64(len(buf)))]
		k, err := r.ReadAt(b, off)
		if k < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		crc = crc32.Update(crc, castagnoli, b)
		off += int64(k)
		n -= int64(k)
	}
	return crc, nil
}

// window reads a region of a file by offset through a buffer of
// scanChunk bytes.
type window struct {
	r   io.ReaderAt
	end int64  // end of the region
	off int64  // offset of buf[0]
	buf []byte // the bytes at off
}

// at returns the n bytes at pos (n ≤ scanChunk, pos+n ≤ end), refilling
// the window from pos if it does not hold them.
func (w *window) at(pos int64, n int) ([]byte, error) {
	if pos >= w.off && pos+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[pos-w.off:][:n], nil
	}
	if w.buf == nil {
		w.buf = make([]byte, scanChunk)
	}
	w.buf = w.buf[:min(int64(cap(w.buf)), w.end-pos)]
	k, err := w.r.ReadAt(w.buf, pos)
	w.buf, w.off = w.buf[:k], pos
	if k < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return w.buf[:n], nil
}

// errScanBudget stops a scan that has spent its checksum budget.
var errScanBudget = errors.New("scan budget spent")

// scanFrames looks for valid frames (a complete frame with a valid
// checksum and a decodable payload) in the region [from, end) of r. At
// every offset where one starts it calls fn with its record: if fn returns
// true the scan goes on after the frame, if false it stops. Elsewhere it
// moves on by one byte. It reports whether fn stopped it.
//
// Most candidate lengths overrun the region at once, so garbage and zeros
// cost O(end-from). Crafted bytes whose every offset claims a long frame
// could cost O((end-from)²) checksum work: past a budget of 16 checksum
// bytes per byte of the region the scan stops with errScanBudget, never an
// unbounded scan. Memory: the window, one piece buffer, and the longest
// frame with a valid checksum found.
func scanFrames(r io.ReaderAt, from, end int64, fn func(*Record) bool) (bool, error) {
	w := &window{r: r, end: end}
	budget := 16*(end-from) + 1<<20
	var chunk, payload []byte
	var rec Record
	for pos := from; pos+frameHeader < end; {
		h, err := w.at(pos, frameHeader)
		if err != nil {
			return false, err
		}
		// Skip the offsets whose length is 0 or overruns the region
		// without leaving the window (most of them, in garbage or zeros).
		b := w.buf[pos-w.off:]
		i := 0
		for ; i+frameHeader <= len(b) && pos+int64(i)+frameHeader < end; i++ {
			if n := int64(binary.LittleEndian.Uint32(b[i:])); n != 0 && n <= end-pos-int64(i)-frameHeader {
				break
			}
		}
		if i > 0 {
			pos += int64(i)
			continue
		}
		length := int64(binary.LittleEndian.Uint32(h))
		if budget -= length; budget < 0 {
			return false, errScanBudget
		}
		var p []byte
		if frameHeader+length <= scanChunk {
			b, err := w.at(pos, frameHeader+int(length))
			if err != nil {
				return false, err
			}
			if frameCRC(b[:4], b[frameHeader:]) == binary.LittleEndian.Uint32(b[4:]) {
				p = b[frameHeader:]
			}
		} else {
			var hdr [frameHeader]byte
			copy(hdr[:], h)
			if chunk == nil {
				chunk = make([]byte, scanChunk)
			}
			crc, err := payloadCRC(r, hdr[:4], pos+frameHeader, length, chunk)
			if err != nil {
				return false, err
			}
			if crc == binary.LittleEndian.Uint32(hdr[4:]) {
				// The checksum matched: the frame's bytes are all there.
				payload = slices.Grow(payload[:0], int(length))[:length]
				if k, err := r.ReadAt(payload, pos+frameHeader); k < len(payload) {
					if err == nil || errors.Is(err, io.EOF) {
						err = io.ErrUnexpectedEOF
					}
					return false, err
				}
				p = payload
			}
		}
		if p == nil || decodePayload(p, &rec) != nil {
			pos++
			continue
		}
		if !fn(&rec) {
			return true, nil
		}
		pos += frameHeader + length
	}
	return false, nil
}

// isTornTail reports whether the bytes of r from an invalid frame at off
// to end are a torn tail: no valid frame starts anywhere in them after
// off. A crash can leave a partial frame, a zero-filled or garbage region
// at the end of the file, but not a valid frame after an invalid one: that
// is corruption. A scan past its checksum budget (crafted bytes) answers
// false (corruption: the operator decides).
func isTornTail(r io.ReaderAt, off, end int64) (bool, error) {
	found, err := scanFrames(r, off+1, end, func(*Record) bool { return false })
	if errors.Is(err, errScanBudget) {
		return false, nil
	}
	return !found && err == nil, err
}

// maxVersionIn returns the highest version carried by the valid frames
// found in r from offset from to end (records a TruncateCorrupt cut
// discards: the versions they handed out were acknowledged). It walks the
// frames, and past an invalid one tries every offset for the next valid
// frame, within the checksum budget of scanFrames. Best effort: a read
// error or a spent budget ends it with what it found.
func maxVersionIn(r io.ReaderAt, from, end int64) uint64 {
	var top uint64
	scanFrames(r, from, end, func(rec *Record) bool {
		top = max(top, rec.maxVersion())
		return true
	})
	return top
}

// cutShort reports whether the frame at off, whose header claims a payload
// of length bytes that the file (ending at end) does not hold, reads as a
// write cut short: its payload's own fields, as far as they are present,
// agree with that length. Record type, flags and cause are valid; a set's,
// removal's or meta's fixed fields are all present and its key and value
// lengths add up to length exactly; a batch's ops are valid and in
// bounds up to where the file ends, before its count of ops is complete.
//
// A torn write of the last frame passes, whatever its value holds (the
// bytes of a valid frame, which isTornTail would take for records after a
// damaged one). A length field damaged in the middle of the log does not:
// the payload after it is complete, so its fields end the record before
// (or after) the damaged length says; only a damage that changed the
// length and the payload's own lengths consistently could pass. A frame
// cut inside its fixed fields is left to isTornTail.
func cutShort(r io.ReaderAt, off, end, length int64) (bool, error) {
	w := &window{r: r, end: end}
	pos, stop := off+frameHeader, off+frameHeader+length
	if stop <= end {
		return false, nil
	}
	b, err := w.at(pos, int(min(end-pos, 1+setFields)))
	if err != nil || len(b) == 0 {
		return false, err
	}
	switch op := Op(b[0]); op {
	case OpSet, OpRemove, OpMeta:
		n, ok := opSize(op, b[1:])
		return ok && n == length, nil
	case OpVersions:
		return len(b) >= 5 && 5+8*int64(binary.LittleEndian.Uint32(b[1:])) == length, nil
	case OpBatch:
		if len(b) < 5 {
			return false, nil
		}
		count := int64(binary.LittleEndian.Uint32(b[1:]))
		if count == 0 || (length-5)/14 < count {
			return false, nil
		}
		pos += 5
		for range count {
			if pos >= end {
				return true, nil // cut at an op's start
			}
			b, err := w.at(pos, int(min(end-pos, 1+setFields)))
			if err != nil {
				return false, err
			}
			op := Op(b[0])
			if op != OpSet && op != OpRemove && op != OpMeta {
				return false, nil
			}
			if len(b) < 1+opFields(op) {
				return true, nil // cut inside the op's fixed fields
			}
			n, ok := opSize(op, b[1:])
			if !ok || pos+n > stop {
				return false, nil
			}
			if pos+n > end {
				return true, nil // cut inside the op's key or value
			}
			pos += n
		}
		return false, nil // every op is there: the record ends before its length
	}
	return false, nil
}

// Fixed fields after the type byte: flags, version, deadline, key and
// value lengths (set); cause, version, key length (remove); flags,
// deadline, key length (meta).
const (
	setFields = 1 + 8 + 8 + 4 + 4
	keyFields = 1 + 8 + 4
)

func opFields(op Op) int {
	if op == OpSet {
		return setFields
	}
	return keyFields
}

// opSize validates the fixed fields f of a set, removal or meta (f may
// run on past them) and returns the size of its encoding: type byte,
// fields, key and value. ok is false if f is shorter than the fields or
// they are invalid.
func opSize(op Op, f []byte) (n int64, ok bool) {
	le := binary.LittleEndian
	if len(f) < opFields(op) {
		return 0, false
	}
	switch op {
	case OpSet:
		if f[0]&^flagPinned != 0 {
			return 0, false
		}
		return 1 + setFields + int64(le.Uint32(f[17:])) + int64(le.Uint32(f[21:])), true
	case OpRemove:
		if c := Cause(f[0]); c < CauseDeleted || c > CauseEvicted {
			return 0, false
		}
	case OpMeta:
		if f[0]&^flagPinned != 0 {
			return 0, false
		}
	default:
		return 0, false
	}
	return 1 + keyFields + int64(le.Uint32(f[9:])), true
}
