package aof

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// frameReader reads frames from a stream. It never allocates more than
// about twice the bytes actually present, whatever length a (hostile)
// header claims.
type frameReader struct {
	r   *bufio.Reader
	off int64 // offset of the next frame
	buf []byte
	hdr [frameHeader]byte // the last frame's header
}

func newFrameReader(r io.Reader, off int64) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 1<<16), off: off}
}

// errFrameEOF is next's clean end: no byte left at a frame boundary.
var errFrameEOF = errors.New("end of frames")

// frameError describes an invalid frame at off. partial reports that the
// input ended inside the frame.
type frameError struct {
	off     int64
	reason  string
	partial bool
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
		return nil, &frameError{fr.off, fmt.Sprintf("input ends %d bytes into a frame header", n), true}
	case err != nil:
		return nil, err
	}
	length := binary.LittleEndian.Uint32(h[:4])
	if length == 0 || uint64(length) > MaxRecordSize {
		return nil, &frameError{fr.off, fmt.Sprintf("frame length %d", length), false}
	}
	if limit >= 0 && int64(length) > limit-frameHeader {
		return nil, &frameError{fr.off, fmt.Sprintf("frame of %d bytes overruns the input", length), true}
	}
	p, err := readN(fr.r, fr.buf[:0], int(length))
	fr.buf = p
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, &frameError{fr.off, fmt.Sprintf("input ends inside a frame of %d bytes", length), true}
		}
		return nil, err
	}
	if frameCRC(h[:4], p) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, &frameError{fr.off, "frame checksum mismatch", false}
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

// validFrameAt reports whether a complete frame with a valid checksum and a
// decodable payload starts at data[i:].
func validFrameAt(data []byte, i int) bool {
	if len(data)-i < frameHeader {
		return false
	}
	length := int64(binary.LittleEndian.Uint32(data[i:]))
	if length == 0 || length > int64(len(data)-i-frameHeader) {
		return false
	}
	p := data[i+frameHeader : i+frameHeader+int(length)]
	if frameCRC(data[i:i+4], p) != binary.LittleEndian.Uint32(data[i+4:]) {
		return false
	}
	var r Record
	return decodePayload(p, &r) == nil
}

// isTornTail reports whether rest (the bytes of a file from an invalid
// frame to its end) is a torn tail: no valid frame starts anywhere in it
// after its first byte. A crash can leave a partial frame, a zero-filled
// or garbage region at the end of the file, but not a valid frame after an
// invalid one: that is corruption.
//
// Most candidate lengths overrun the tail at once, so garbage and zeros
// cost O(len(rest)). Crafted bytes whose every offset claims a long frame
// could cost O(len(rest)²) checksum work: past a budget of 16 checksum
// bytes per tail byte the answer is false (corruption: the operator
// decides), never an unbounded scan.
func isTornTail(rest []byte) bool {
	budget := 16*int64(len(rest)) + 1<<20
	for i := 1; i+frameHeader < len(rest); i++ {
		length := int64(binary.LittleEndian.Uint32(rest[i:]))
		if length == 0 || length > int64(len(rest)-i-frameHeader) {
			continue
		}
		if budget -= length; budget < 0 {
			return false
		}
		if validFrameAt(rest, i) {
			return false
		}
	}
	return true
}

// maxVersionIn returns the highest version carried by the valid frames
// found in data from offset from on (records a TruncateCorrupt cut
// discards: the versions they handed out were acknowledged). It walks the
// frames, and past an invalid one tries every offset for the next valid
// frame, within the checksum budget of isTornTail.
func maxVersionIn(data []byte, from int) uint64 {
	var top uint64
	budget := 16*int64(len(data)) + 1<<20
	var r Record
	for i := max(from, 0); i+frameHeader < len(data); {
		length := int64(binary.LittleEndian.Uint32(data[i:]))
		if length == 0 || length > int64(len(data)-i-frameHeader) {
			i++
			continue
		}
		if budget -= length; budget < 0 {
			break
		}
		p := data[i+frameHeader : i+frameHeader+int(length)]
		if frameCRC(data[i:i+4], p) != binary.LittleEndian.Uint32(data[i+4:]) || decodePayload(p, &r) != nil {
			i++
			continue
		}
		top = max(top, r.maxVersion())
		i += frameHeader + int(length)
	}
	return top
}
