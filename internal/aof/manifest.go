package aof

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// The directory holds:
//
//	LOCK                 flocked while a log has the directory open
//	MANIFEST             the current manifest (replaced atomically by rename)
//	MANIFEST.tmp         a manifest being written
//	base-NNNNNNNNNN.snap the base: a snapshot (see WriteSnapshot)
//	base-NNNNNNNNNN.tmp  a base being written by a rewrite
//	incr-NNNNNNNNNN.log  an incremental log
//
// Only the files the manifest names are part of the log; any other file
// with one of these names is debris of an interrupted step and is removed
// when the log is opened. Other files are left alone.
const (
	manifestName = "MANIFEST"
	manifestTmp  = "MANIFEST.tmp"
	manifestHead = "tide-manifest 1\n"
)

// maxManifestSize bounds a manifest: a longer one is corrupt and never
// read into memory, and a rewrite that would write one fails instead.
// A manifest grows by 25 bytes per incremental log, and only a rewrite
// that failed after its switch leaves one more: 1 MiB is some 40,000 of
// them.
const maxManifestSize = 1 << 20

// maxFileSeq is the highest file number: names have room for ten digits.
const maxFileSeq = 9_999_999_999

// manifest lists the log's files in replay order: at most one base, then
// one or more incremental logs; appends go to the last one.
type manifest struct {
	base  uint64   // 0 = no base
	incrs []uint64 // ascending, never empty once opened
}

func baseName(seq uint64) string    { return fmt.Sprintf("base-%010d.snap", seq) }
func baseTmpName(seq uint64) string { return fmt.Sprintf("base-%010d.tmp", seq) }
func incrName(seq uint64) string    { return fmt.Sprintf("incr-%010d.log", seq) }

// maxSeq returns the highest sequence number the manifest names.
func (m manifest) maxSeq() uint64 {
	s := m.base
	if n := len(m.incrs); n > 0 {
		s = max(s, m.incrs[n-1])
	}
	return s
}

// names returns the manifest's files in replay order.
func (m manifest) names() []string {
	var out []string
	if m.base != 0 {
		out = append(out, baseName(m.base))
	}
	for _, s := range m.incrs {
		out = append(out, incrName(s))
	}
	return out
}

func (m manifest) encode() []byte {
	var b bytes.Buffer
	b.WriteString(manifestHead)
	if m.base != 0 {
		fmt.Fprintf(&b, "base %s\n", baseName(m.base))
	}
	for _, s := range m.incrs {
		fmt.Fprintf(&b, "incr %s\n", incrName(s))
	}
	fmt.Fprintf(&b, "crc %08x\n", crc32.Checksum(b.Bytes(), castagnoli))
	return b.Bytes()
}

// parseManifest decodes and validates a manifest.
func parseManifest(data []byte) (manifest, error) {
	var m manifest
	bad := func(off int, format string, args ...any) (manifest, error) {
		return manifest{}, &CorruptError{File: manifestName, Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
	}
	if !bytes.HasPrefix(data, []byte(manifestHead)) {
		return bad(0, "not a tide manifest")
	}
	i := bytes.LastIndex(data[:max(len(data)-1, 0)], []byte("\n"))
	if i < 0 || !bytes.HasSuffix(data, []byte("\n")) {
		return bad(0, "no checksum line")
	}
	body, last := data[:i+1], string(data[i+1:len(data)-1])
	sum, ok := strings.CutPrefix(last, "crc ")
	want, err := strconv.ParseUint(sum, 16, 32)
	if !ok || err != nil || len(sum) != 8 {
		return bad(i+1, "bad checksum line %q", last)
	}
	if got := crc32.Checksum(body, castagnoli); uint32(want) != got {
		return bad(i+1, "checksum %08x, want %08x", got, want)
	}
	off := len(manifestHead)
	var lines []string
	if len(body) > off {
		lines = strings.Split(string(body[off:len(body)-1]), "\n")
	}
	var prev uint64
	for _, line := range lines {
		kind, name, ok := strings.Cut(line, " ")
		var seq uint64
		switch {
		case !ok:
		case kind == "base" && m.base == 0 && len(m.incrs) == 0:
			// The base of a rewrite is numbered after the incremental log
			// it switched to: only incremental logs are in order.
			seq = parseSeq(name, "base-", ".snap")
			m.base = seq
			prev = 0
		case kind == "incr":
			seq = parseSeq(name, "incr-", ".log")
			m.incrs = append(m.incrs, seq)
		}
		if seq == 0 || seq <= prev {
			return bad(off, "bad line %q", line)
		}
		if kind == "incr" {
			prev = seq
		}
		off += len(line) + 1
	}
	if len(m.incrs) == 0 {
		return bad(off, "no incremental log")
	}
	return m, nil
}

// parseSeq returns the sequence number of a file name of the given form,
// or 0 if name is not of that form (exactly ten digits, not zero).
func parseSeq(name, prefix, suffix string) uint64 {
	d, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0
	}
	d, ok = strings.CutSuffix(d, suffix)
	if !ok || len(d) != 10 {
		return 0
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0
		}
	}
	n, _ := strconv.ParseUint(d, 10, 64)
	return n
}

// ownFile reports whether name is one of the names the log creates (and so
// may remove as debris when the manifest does not name it).
func ownFile(name string) bool {
	return name == manifestTmp || parseSeq(name, "base-", ".snap") != 0 ||
		parseSeq(name, "base-", ".tmp") != 0 || parseSeq(name, "incr-", ".log") != 0
}

// writeManifest makes m the current manifest: write a temporary file,
// fsync it, rename it over MANIFEST, fsync the directory. A crash at any
// step leaves either the old or the new manifest in place, complete.
func writeManifest(fsys FS, m manifest) error {
	f, err := fsys.Create(manifestTmp)
	if err != nil {
		return fmt.Errorf("tide: log manifest: %w", err)
	}
	data := m.encode()
	if len(data) > maxManifestSize {
		f.Close()
		return fmt.Errorf("tide: log manifest: %d bytes, limit %d: too many incremental logs", len(data), maxManifestSize)
	}
	n, err := f.WriteAt(data, 0)
	if err == nil && n < len(data) {
		err = errShortWrite
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(manifestTmp, manifestName)
	}
	if err == nil {
		err = fsys.SyncDir()
	}
	if err != nil {
		return fmt.Errorf("tide: log manifest: %w", err)
	}
	return nil
}

// File headers: 8 bytes of magic, a uint32 format version, and the CRC-32C
// of those 12 bytes.
const (
	fileHeader    = 16
	formatVersion = 1
	logMagic      = "tide-aof"
	snapMagic     = "tide-snp"
)

func appendFileHeader(dst []byte, magic string) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint32(dst, formatVersion)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// checkFileHeader validates a header read from a file or stream.
func checkFileHeader(h []byte, magic, file string) error {
	bad := func(reason string) error {
		return &CorruptError{File: file, Offset: 0, Reason: reason}
	}
	if len(h) < fileHeader {
		return &CorruptError{File: file, Reason: "file shorter than its header", Truncated: true}
	}
	if string(h[:8]) != magic {
		return bad(fmt.Sprintf("magic %q, want %q", h[:8], magic))
	}
	if crc32.Checksum(h[:12], castagnoli) != binary.LittleEndian.Uint32(h[12:]) {
		return bad("header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != formatVersion {
		return bad(fmt.Sprintf("format version %d, this build reads %d", v, formatVersion))
	}
	return nil
}
