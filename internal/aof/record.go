package aof

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
)

// Op is a record's kind.
type Op uint8

const (
	// OpSet stores Key = Value with Version, Deadline and Pinned, replacing
	// whatever the key held. Counter results are logged as sets.
	OpSet Op = iota + 1
	// OpRemove removes Key for Cause if the key's version is Version (or
	// whatever its version if Version is NoVersion). Being conditional, a
	// removal logged late (an expiry or eviction appended after the shard
	// lock was released) can never remove a later incarnation of the key.
	OpRemove
	// OpMeta sets an existing key's Deadline and Pinned without changing
	// its value or version (Expire, Persist, Pin, GetAndExpire). Replay
	// ignores it if the key does not exist.
	OpMeta
	// OpVersions records the per-shard version counters (Versions): a
	// high-water mark, so that versions are never reused after a restart
	// even when the records that used them were compacted away.
	OpVersions
	// OpBatch applies Batch (sets, removes and metas) atomically: the
	// whole batch is one checksummed record, so recovery applies all of it
	// or none of it. Commit logs one batch; so does any write that evicted
	// or expired other keys on its way.
	OpBatch

	opEnd // snapshot end marker; never delivered
)

func (o Op) String() string {
	switch o {
	case OpSet:
		return "set"
	case OpRemove:
		return "remove"
	case OpMeta:
		return "meta"
	case OpVersions:
		return "versions"
	case OpBatch:
		return "batch"
	case opEnd:
		return "end"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Cause says why a key was removed (OpRemove).
type Cause uint8

const (
	// CauseDeleted: a delete, a transaction's delete, or an Expire to a
	// deadline already due.
	CauseDeleted Cause = iota + 1
	// CauseExpired: the deadline passed (lazy or active expiry, or a
	// set whose deadline had passed at recovery).
	CauseExpired
	// CauseEvicted: chosen by the eviction policy.
	CauseEvicted
)

func (c Cause) String() string {
	switch c {
	case CauseDeleted:
		return "deleted"
	case CauseExpired:
		return "expired"
	case CauseEvicted:
		return "evicted"
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// NoDeadline is the Deadline of a key without expiry.
const NoDeadline int64 = 0

// NoVersion as an OpRemove's Version makes the removal unconditional.
const NoVersion uint64 = 0

// Record is one logged mutation. Which fields are meaningful depends on Op:
//
//	OpSet       Key, Value, Version, Deadline, Pinned
//	OpRemove    Key, Version, Cause
//	OpMeta      Key, Deadline, Pinned
//	OpVersions  Versions
//	OpBatch     Batch (each an OpSet, OpRemove or OpMeta)
//
// Deadline is an absolute wall-clock instant in Unix nanoseconds (the
// engine's clock.Real reads Unix time), or NoDeadline. A record handed to a
// replay callback aliases the reader's buffer: its Value, Versions and Batch
// are valid only until the callback returns.
type Record struct {
	Op       Op
	Key      string
	Value    []byte
	Version  uint64
	Deadline int64
	Pinned   bool
	Cause    Cause
	Versions []uint64
	Batch    []Record
}

// Due reports whether the record leaves its key with a deadline that has
// passed at now (an OpSet or OpMeta with a deadline ≤ now).
func (r *Record) Due(now int64) bool {
	return (r.Op == OpSet || r.Op == OpMeta) && r.Deadline != NoDeadline && r.Deadline <= now
}

// maxVersion returns the highest version r carries (its own, its
// Versions', its batch's).
func (r *Record) maxVersion() uint64 {
	v := r.Version
	for _, w := range r.Versions {
		v = max(v, w)
	}
	for i := range r.Batch {
		v = max(v, r.Batch[i].maxVersion())
	}
	return v
}

// Frame layout, little endian:
//
//	length  uint32  payload length, 1..MaxRecordSize
//	crc     uint32  CRC-32C (Castagnoli) of the length field and the payload
//	payload [length]byte
const frameHeader = 8

// MaxRecordSize is the largest record payload: a frame's length is a
// uint32, and on 32-bit platforms a slice holds at most MaxInt32 bytes.
const MaxRecordSize = min(math.MaxUint32, math.MaxInt-frameHeader)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const flagPinned = 1

// AppendFrame appends r's frame (header and payload) to dst. On error dst
// is returned unchanged in length.
func AppendFrame(dst []byte, r *Record) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, frameHeader)...)
	dst, err := appendPayload(dst, r, false)
	if err != nil {
		return dst[:start], err
	}
	n := len(dst) - start - frameHeader
	if n > MaxRecordSize {
		return dst[:start], fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, MaxRecordSize)
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(n))
	binary.LittleEndian.PutUint32(dst[start+4:], frameCRC(dst[start:start+4], dst[start+frameHeader:]))
	return dst, nil
}

func frameCRC(length, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(length, castagnoli), castagnoli, payload)
}

func appendPayload(dst []byte, r *Record, inBatch bool) ([]byte, error) {
	le := binary.LittleEndian
	switch r.Op {
	case OpSet:
		if uint64(len(r.Key)) > math.MaxUint32 || uint64(len(r.Value)) > math.MaxUint32 {
			return dst, fmt.Errorf("%w: key or value longer than 4 GiB", ErrTooLarge)
		}
		dst = append(dst, byte(OpSet), pinFlag(r.Pinned))
		dst = le.AppendUint64(dst, r.Version)
		dst = le.AppendUint64(dst, uint64(r.Deadline))
		dst = le.AppendUint32(dst, uint32(len(r.Key)))
		dst = le.AppendUint32(dst, uint32(len(r.Value)))
		dst = append(dst, r.Key...)
		return append(dst, r.Value...), nil
	case OpRemove:
		if r.Cause < CauseDeleted || r.Cause > CauseEvicted {
			return dst, fmt.Errorf("%w: remove with %v", ErrInvalidRecord, r.Cause)
		}
		if uint64(len(r.Key)) > math.MaxUint32 {
			return dst, fmt.Errorf("%w: key longer than 4 GiB", ErrTooLarge)
		}
		dst = append(dst, byte(OpRemove), byte(r.Cause))
		dst = le.AppendUint64(dst, r.Version)
		dst = le.AppendUint32(dst, uint32(len(r.Key)))
		return append(dst, r.Key...), nil
	case OpMeta:
		if uint64(len(r.Key)) > math.MaxUint32 {
			return dst, fmt.Errorf("%w: key longer than 4 GiB", ErrTooLarge)
		}
		dst = append(dst, byte(OpMeta), pinFlag(r.Pinned))
		dst = le.AppendUint64(dst, uint64(r.Deadline))
		dst = le.AppendUint32(dst, uint32(len(r.Key)))
		return append(dst, r.Key...), nil
	case OpVersions:
		if inBatch {
			return dst, fmt.Errorf("%w: versions inside a batch", ErrInvalidRecord)
		}
		if uint64(len(r.Versions)) > math.MaxUint32/8 {
			return dst, fmt.Errorf("%w: %d versions", ErrTooLarge, len(r.Versions))
		}
		dst = append(dst, byte(OpVersions))
		dst = le.AppendUint32(dst, uint32(len(r.Versions)))
		for _, v := range r.Versions {
			dst = le.AppendUint64(dst, v)
		}
		return dst, nil
	case OpBatch:
		if inBatch {
			return dst, fmt.Errorf("%w: batch inside a batch", ErrInvalidRecord)
		}
		if uint64(len(r.Batch)) > math.MaxUint32 {
			return dst, fmt.Errorf("%w: %d ops in a batch", ErrTooLarge, len(r.Batch))
		}
		dst = append(dst, byte(OpBatch))
		dst = le.AppendUint32(dst, uint32(len(r.Batch)))
		for i := range r.Batch {
			var err error
			if dst, err = appendPayload(dst, &r.Batch[i], true); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	return dst, fmt.Errorf("%w: %v", ErrInvalidRecord, r.Op)
}

func pinFlag(p bool) byte {
	if p {
		return flagPinned
	}
	return 0
}

// decodePayload decodes one payload into r. Values alias p. The encoding is
// canonical: a payload decodes only if re-encoding the record gives the
// same bytes (unknown flags, causes and trailing bytes are rejected).
func decodePayload(p []byte, r *Record) error {
	rest, err := decodeOp(p, r, false)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d trailing bytes after %v", len(rest), r.Op)
	}
	return nil
}

func decodeOp(p []byte, r *Record, inBatch bool) ([]byte, error) {
	le := binary.LittleEndian
	if len(p) == 0 {
		return nil, fmt.Errorf("empty payload")
	}
	*r = Record{Op: Op(p[0])}
	p = p[1:]
	switch r.Op {
	case OpSet:
		if len(p) < 1+8+8+4+4 {
			return nil, fmt.Errorf("short set")
		}
		if p[0]&^flagPinned != 0 {
			return nil, fmt.Errorf("set flags %#x", p[0])
		}
		r.Pinned = p[0] == flagPinned
		r.Version = le.Uint64(p[1:])
		r.Deadline = int64(le.Uint64(p[9:]))
		kl, vl := uint64(le.Uint32(p[17:])), uint64(le.Uint32(p[21:]))
		p = p[25:]
		if uint64(len(p)) < kl+vl {
			return nil, fmt.Errorf("set key and value overrun the payload")
		}
		r.Key = string(p[:kl])
		r.Value = p[kl : kl+vl : kl+vl]
		return p[kl+vl:], nil
	case OpRemove:
		if len(p) < 1+8+4 {
			return nil, fmt.Errorf("short remove")
		}
		r.Cause = Cause(p[0])
		if r.Cause < CauseDeleted || r.Cause > CauseEvicted {
			return nil, fmt.Errorf("remove cause %d", p[0])
		}
		r.Version = le.Uint64(p[1:])
		kl := uint64(le.Uint32(p[9:]))
		p = p[13:]
		if uint64(len(p)) < kl {
			return nil, fmt.Errorf("remove key overruns the payload")
		}
		r.Key = string(p[:kl])
		return p[kl:], nil
	case OpMeta:
		if len(p) < 1+8+4 {
			return nil, fmt.Errorf("short meta")
		}
		if p[0]&^flagPinned != 0 {
			return nil, fmt.Errorf("meta flags %#x", p[0])
		}
		r.Pinned = p[0] == flagPinned
		r.Deadline = int64(le.Uint64(p[1:]))
		kl := uint64(le.Uint32(p[9:]))
		p = p[13:]
		if uint64(len(p)) < kl {
			return nil, fmt.Errorf("meta key overruns the payload")
		}
		r.Key = string(p[:kl])
		return p[kl:], nil
	case OpVersions:
		if inBatch {
			return nil, fmt.Errorf("versions inside a batch")
		}
		if len(p) < 4 {
			return nil, fmt.Errorf("short versions")
		}
		n := uint64(le.Uint32(p))
		p = p[4:]
		if uint64(len(p))/8 < n {
			return nil, fmt.Errorf("versions overrun the payload")
		}
		r.Versions = make([]uint64, n)
		for i := range r.Versions {
			r.Versions[i] = le.Uint64(p[8*i:])
		}
		return p[8*n:], nil
	case OpBatch:
		if inBatch {
			return nil, fmt.Errorf("batch inside a batch")
		}
		if len(p) < 4 {
			return nil, fmt.Errorf("short batch")
		}
		n := uint64(le.Uint32(p))
		p = p[4:]
		// Every op takes at least 14 bytes: bound the allocation by the
		// payload, not by an adversary's count.
		if uint64(len(p))/14 < n {
			return nil, fmt.Errorf("batch of %d ops overruns the payload", n)
		}
		r.Batch = make([]Record, n)
		for i := range r.Batch {
			var err error
			if p, err = decodeOp(p, &r.Batch[i], true); err != nil {
				return nil, fmt.Errorf("batch op %d: %v", i, err)
			}
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown record type %d", uint8(r.Op))
}
