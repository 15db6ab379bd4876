package engine

import (
	"encoding/binary"
	"math"
	"sync/atomic"
	"unsafe"
)

// Storage layout (per shard)
//
// Every shard keeps its entries in pointer-free structures, so that the
// garbage collector scans almost nothing however many entries there are:
//
//   - arena []byte: one record per entry, a header followed by the key
//     and the value, each padded to 8 bytes. The header is 16 bytes for a
//     key of up to 255 bytes and a value of up to 65,535 (the version,
//     then one word with the entry's slot, both lengths and the flags),
//     24 for longer ones (the lengths in a word of their own, flagWide);
//     a record of an entry with a TTL has an 8-byte deadline word after
//     the header (flagDeadline), 24 or 32 bytes in all. Writes append. An overwrite whose
//     value fits the old one's padded length is done in place, with atomic
//     word stores, unless a View may be reading the old value in place (a
//     View marked it, flagViewed, and a View of the shard is in progress,
//     viewCounts): then it appends a new record, and the old record's
//     bytes are never written again; so does giving a TTL to an entry whose
//     record has no deadline word. An arena's bytes are never reused for
//     another record: when an append does not fit, the arena moves into a
//     new array 25% larger, bytes and offsets as they are (doubling while
//     New replays the log), or, if more than an eighth of it is garbage,
//     is rebuilt compactly into a new array (25% headroom, more for an
//     arena that filled with garbage); so is an arena whose garbage
//     exceeds half of it after removals. So Engine.View can hand a value
//     to a callback that runs with no lock held. Bytes no live record uses
//     are counted as garbage. The copy, which takes time proportional to
//     the shard, leaves lock-free readers reading the old arrays (see
//     openLocked), so it is no pause for them.
//   - ents []uint32: the arena offset (+1) of each slot's record; 0 marks a
//     free slot (free slots are kept on a stack and reused). The slot is the
//     entry's handle for the eviction policy and the expiry index, which
//     reach the record through ents; the record names its slot, so a
//     reader that found the record by its key has the handle too. A
//     writer that found a key through the table remembers the slot's word
//     (slots.remember), so the write does not read ents at all.
//   - tab table.Table: open addressing from a 32-bit tag of the key hash to
//     the record's arena offset (in 8-byte units, recRef; 8 bytes a word),
//     so a lookup goes from the table word straight to the record, without
//     the ents hop (a cache miss of its own at a million entries: the
//     lookup went from three dependent misses to two). Keys are confirmed
//     against the arena. A record that moves (an overwrite into a new
//     record, a rebuild) has its word changed (Table.Replace, Table.Remap
//     into a new array). Its
//     length is not a power of two: it grows by an eighth (doubling while
//     small) and keeps its load between 0.72 and 13/16, about 10.4 bytes
//     an entry; a word's home is the tag scaled to the length, and clusters
//     are kept in home order (Robin Hood), so a miss stops early.
//
// Records are 8-byte aligned (recSize pads them) in an 8-byte aligned
// arena (newArena), and every header word is read and written with
// sync/atomic; ents and table words are stored with sync/atomic too. That
// is what lets a reader without the lock (shard.probe) read them while a
// writer works, race-free under the Go memory model: it reads the shard's
// published arrays (storeView, replaced when a writer replaces an array),
// follows table word → record, and keeps the result only if the shard's
// sequence count did not move (see shardMu). A record's key bytes are
// written before the table points to the record and never after; the
// reader still compares them with atomic word loads (probe), since a
// stale view may take any bytes of an old arena for a key, some of them
// header words written concurrently. It copies the value with atomic word
// loads too (loadValue), since a writer may overwrite it in place
// (storeValue), and a View hands it out only once flagViewed is set.
//
// What readers and writers share, line by line: the shard struct starts
// with the line optimistic readers read (the sequence count, pub, the
// read log's pointer), and its RWMutex and every field a writer changes
// follow at least 64 bytes later, so a writer at work does not take that
// line from them; the sequence count is odd only while a writer may
// change the arrays (policy work under the lock runs with it even). A
// reader writes its P's stripes: of the engine's hit/miss counters, of
// the shard's read log and, in View, of the shard's View counts (see
// procStripe, which says when two readers write one stripe); a View also
// sets flagViewed once per record.
//
// A read is thus: hash, table word, record (header, key and value are
// contiguous): two dependent cache misses for a key not in the CPU cache. Entries with a TTL also have an item (deadline,
// slot) in the shard's expiry.Index, a B+-tree whose leaves are
// pointer-free runs of items, filed lazily (see setDeadlineLocked).
//
// Byte accounting is by construction: an entry accounts len(key) +
// len(value) + EntryOverhead, and the shard's total is the sum over its
// live entries. EntryOverhead is measured (see README, "Memory").

// EntryOverhead is the number of bytes the engine accounts per entry beyond
// its key and value: the record header and slot word, the hash-table word at
// its mean load, arena headroom, and shard bookkeeping, as measured by
// TestEntryOverheadMatchesHeap.
const EntryOverhead = 48

const (
	flagPinned  = 1 << iota // never evicted
	flagTracked             // known to the eviction policy
	// flagViewed: a View may be reading the value in place, so the record
	// must not be overwritten in place while a View of the shard is in
	// progress (an overwrite appends a new record instead; see
	// viewCounts). Set by View; cleared by an in-place overwrite; not
	// carried over by an arena rebuild.
	flagViewed
	// flagDeadline: the header ends with a deadline word (at deadlineOff),
	// and the key follows it. A record gets one when it is written with a TTL or
	// given one (an entry written without a TTL is moved to a new record
	// with the word when it gets one); it keeps it, 0 when the TTL is
	// cleared, until the arena is rebuilt. A record without it has no TTL.
	flagDeadline
	// flagWide: the key is longer than compactMaxKey or the value longer
	// than compactMaxValue, so the lengths do not fit the meta word: they
	// are in the word after it (hdrWide), and the header is 8 bytes
	// longer. It follows from the lengths (widthFlag; putHeader sets it),
	// and a record never changes width: an overwrite in place needs a
	// value of the same width.
	flagWide
)

// Record header layout. Every header word is read and written whole with
// sync/atomic (a View sets flagViewed without the exclusive lock, and
// optimistic readers read headers a writer may be changing), so the
// fields' places in a word do not depend on the machine's byte order.
//
//	word 0 (hdrVersion): the version
//	word 1 (hdrMeta):    slot (bits 0–31) | klen (32–39) | vlen (40–55) | flags (56–63)
//	word 2 (hdrWide):    with flagWide only: vlen (0–31) | klen (32–55);
//	                     the meta word's length fields are then 0
//	then, with flagDeadline only, the deadline (int64, engine-clock ns;
//	0 = no TTL), then the key, then the value.
//
// So what a read of a key without TTL needs (the lengths and flags, then
// the key) is contiguous from byte 8 to the key's end, 24 bytes for a
// 16-byte key, which straddle two cache lines for 2 of the 8 alignments of
// a record; the version is read only when needed (GetItem, a write). A
// compact header (16 bytes) holds keys of up to 255 bytes and values of
// up to 65,535: 8 bytes an entry less than a header with the lengths in a
// word of their own.
const (
	hdrVersion      = 0  // uint64
	hdrMeta         = 8  // uint64: slot | klen << 32 | vlen << 40 | flags << 56
	hdrWide         = 16 // uint64 with flagWide: vlen | klen << 32
	hdrSize         = 16 // a compact header without a deadline word
	maxKeyLen       = 1<<24 - 1
	compactMaxKey   = 1<<8 - 1
	compactMaxValue = 1<<16 - 1
)

// widthFlag is flagWide if a record with a key of klen and a value of
// vlen bytes needs the wide header.
func widthFlag[T ~int | ~uint32](klen, vlen T) uint32 {
	if klen > compactMaxKey || vlen > compactMaxValue {
		return flagWide
	}
	return 0
}

// hdrLens[flags>>3&3] is the header length of a record with the given
// flags: 16, 8 more with flagWide, 8 more with flagDeadline (flagDeadline
// and flagWide are bits 3 and 4).
var hdrLens = [4]uint32{hdrSize, hdrSize + 8, hdrSize + 8, hdrSize + 16}

// hdrLen is the header length of a record with the given flags.
func hdrLen(flags uint32) uint32 { return hdrLens[flags>>3&3] }

// deadlineOff is the offset of the deadline word from a record's start
// (with flagDeadline only): the end of the header without it.
func deadlineOff(flags uint32) uint32 { return hdrLens[flags>>3&2] }

// metaKW decodes a compact meta word m into the key length and flags word
// (klen | flags << 24) and the value length; ok is false if m has
// flagWide (the lengths are then in the hdrWide word: wideKW). The meta
// word's upper half is klen | vlen << 8 | flags << 24, so kw is that half
// without vlen.
func metaKW(m uint64) (kw, vl uint32, ok bool) {
	hi := uint32(m >> 32)
	return hi &^ (compactMaxValue << 8), hi >> 8 & compactMaxValue, hi>>24&flagWide == 0
}

// wideKW decodes a meta word m with flagWide and its hdrWide word w.
func wideKW(m, w uint64) (kw, vl uint32) {
	return uint32(w>>32)&maxKeyLen | uint32(m>>56)<<24, uint32(w)
}

// maxArena is the largest arena a shard may have: offsets are uint32, and
// on 32-bit platforms a slice is at most MaxInt32 bytes. A variable only so
// that tests can fill an arena without gigabytes of memory.
var maxArena = int64(min(uint64(math.MaxUint32), uint64(math.MaxInt)))

// entry is a view of one live record: the shard, the slot and the record's
// arena offset. It is only valid until the arena is next rebuilt
// (allocLocked) or the record moves (an overwrite into a new record, a
// TTL given to a record without a deadline word: setDeadlineLocked, which
// returns the entry where it is), after which it must be taken again with
// at.
type entry struct {
	s    *shard
	slot uint32
	off  uint32
}

// at returns the entry at a live slot.
func (s *shard) at(slot uint32) entry { return entry{s, slot, s.ents.get(slot) - 1} }

// The header's words are read and written with atomic operations, so that an
// optimistic reader (see shard.probe) that reads them without the lock while
// a writer changes a deadline or flags races with nothing. Records are
// 8-byte aligned in an 8-byte aligned arena (see recSize and newArena).
func hdr64(arena []byte, at uint32) *uint64 { return (*uint64)(unsafe.Pointer(&arena[at])) }

func (en entry) version() uint64 { return atomic.LoadUint64(hdr64(en.s.arena, en.off+hdrVersion)) }
func (en entry) meta() uint64    { return atomic.LoadUint64(hdr64(en.s.arena, en.off+hdrMeta)) }

// lengths returns the record's key length and flags word (klen | flags <<
// 24) and its value length. It decodes as metaKW and wideKW do, written
// out: with those calls it is over the inliner's budget (cost 110 of 80),
// and as a call, asked several times a write, it cost an overwrite about
// 300 instructions.
func (en entry) lengths() (kw, vl uint32) {
	a := en.s.arena
	hi := uint32(atomic.LoadUint64(hdr64(a, en.off+hdrMeta)) >> 32)
	if hi>>24&flagWide == 0 {
		return hi &^ (compactMaxValue << 8), hi >> 8 & compactMaxValue
	}
	w := atomic.LoadUint64(hdr64(a, en.off+hdrWide))
	return uint32(w>>32)&maxKeyLen | hi&^(1<<24-1), uint32(w)
}

// deadline is the entry's deadline, 0 if it has no TTL.
func (en entry) deadline() int64 {
	f := en.flags()
	if f&flagDeadline == 0 {
		return 0
	}
	return int64(atomic.LoadUint64(hdr64(en.s.arena, en.off+deadlineOff(f))))
}
func (en entry) vlen() uint32  { _, vl := en.lengths(); return vl }
func (en entry) klen() uint32  { kw, _ := en.lengths(); return kw & maxKeyLen }
func (en entry) flags() uint32 { return uint32(en.meta() >> 56) }

// kw is the record's key length and flags word (klen | flags << 24).
func (en entry) kw() uint32 { kw, _ := en.lengths(); return kw }

func (en entry) setVersion(v uint64) {
	atomic.StoreUint64(hdr64(en.s.arena, en.off+hdrVersion), v)
}

// setVlen changes the value length of a record overwritten in place, by
// a value of the record's width (widthFlag). The caller holds the shard's
// lock and has made the sequence count odd: a View's mark (flagViewed)
// set meanwhile may be lost, but the View then fails its validation.
func (en entry) setVlen(n uint32) {
	if m := en.meta(); m>>56&flagWide == 0 {
		atomic.StoreUint64(hdr64(en.s.arena, en.off+hdrMeta), m&^(compactMaxValue<<40)|uint64(n)<<40)
	} else {
		p := hdr64(en.s.arena, en.off+hdrWide)
		atomic.StoreUint64(p, atomic.LoadUint64(p)&^(1<<32-1)|uint64(n))
	}
}

// setDeadlineField writes the deadline of a record with flagDeadline;
// callers use shard.setDeadlineLocked.
func (en entry) setDeadlineField(d int64) {
	atomic.StoreUint64(hdr64(en.s.arena, en.off+deadlineOff(en.flags())), uint64(d))
}

// setFlags replaces the record's flags with f, which must keep its
// flagWide and flagDeadline (they describe the layout). The caller holds
// the shard's lock: a View's mark (flagViewed) set between the caller's
// reading of the flags and this store may be lost, but the caller's
// writer moves the sequence count, so that View fails its validation.
func (en entry) setFlags(f uint32) {
	p := hdr64(en.s.arena, en.off+hdrMeta)
	atomic.StoreUint64(p, atomic.LoadUint64(p)&^(0xff<<56)|uint64(f)<<56)
}

// putHeader writes a whole header at off, and returns its key length and
// flags word: with a deadline word if flags has flagDeadline (deadline is
// then its value; otherwise it must be 0), wide or compact as the lengths
// require (flags' flagWide is replaced by widthFlag's).
func putHeader(arena []byte, off uint32, version uint64, deadline int64, vlen, klen, flags, slot uint32) (kw uint32) {
	flags = flags&^flagWide | widthFlag(klen, vlen)
	atomic.StoreUint64(hdr64(arena, off+hdrVersion), version)
	if flags&flagWide == 0 {
		atomic.StoreUint64(hdr64(arena, off+hdrMeta), uint64(slot)|uint64(klen)<<32|uint64(vlen)<<40|uint64(flags)<<56)
	} else {
		atomic.StoreUint64(hdr64(arena, off+hdrMeta), uint64(slot)|uint64(flags)<<56)
		atomic.StoreUint64(hdr64(arena, off+hdrWide), uint64(vlen)|uint64(klen)<<32)
	}
	if flags&flagDeadline != 0 {
		atomic.StoreUint64(hdr64(arena, off+deadlineOff(flags)), uint64(deadline))
	}
	return klen | flags<<24
}

// deadlineFlag is flagDeadline if a record must have a deadline word: it
// has a deadline (d ≠ 0), or keeps one it had (had has flagDeadline).
func deadlineFlag(d int64, had uint32) uint32 {
	if d != 0 {
		return flagDeadline
	}
	return had & flagDeadline
}

// recRef is what the hash table stores for the record at arena offset off:
// the offset in 8-byte units (records are 8-byte aligned), so that any
// offset of an arena up to maxArena fits the table's 32-bit values.
func recRef(off uint32) uint32 { return off >> 3 }

// refOff is the arena offset of the record the table value r names.
func refOff(r uint32) uint32 { return r << 3 }

func (en entry) key() []byte {
	kw := en.kw()
	k := en.off + hdrLen(kw>>24)
	return en.s.arena[k : k+kw&maxKeyLen]
}

func (en entry) value() []byte {
	kw, vl := en.lengths()
	v := valueAt(en.off, kw)
	return en.s.arena[v : v+vl]
}

// pad8 rounds n up to a multiple of 8.
func pad8[T ~uint32 | ~uint64 | ~int](n T) T { return (n + 7) &^ 7 }

// keyAt is the arena offset of the key of the record at off whose key
// length and flags word is kw.
func keyAt(off, kw uint32) uint32 { return off + hdrLen(kw>>24) }

// valueAt is the arena offset of the value of the record at off whose key
// length and flags word is kw: 8-byte aligned, so that it can be read and
// overwritten in place a word at a time with atomic operations.
func valueAt(off, kw uint32) uint32 { return keyAt(off, kw) + pad8(kw&maxKeyLen) }

// arenaWords returns where the pad8(n) bytes at at start in arena, the
// words an atomic word loop reads or writes: their range is checked once,
// against the arena's length, by slicing (which reads no memory: indexing
// the last byte is a plain read, which the race detector sees racing an
// in-place overwrite).
func arenaWords(arena []byte, at uint32, n int) unsafe.Pointer {
	return unsafe.Pointer(unsafe.SliceData(arena[at : int(at)+pad8(n) : len(arena)]))
}

// storeValue writes value at v (from valueAt) with atomic word stores, the
// last word zero-padded: an optimistic reader copying the value at the same
// time (loadValue) races with nothing, and its sequence check discards
// what it read. The words hold the bytes in memory order (native byte
// order), as a copy would, so that View hands out the value as written.
// The range is checked once (arenaWords).
func storeValue(arena []byte, v uint32, value []byte) {
	n := len(value)
	if n == 0 {
		return
	}
	p := arenaWords(arena, v, n)
	i := 0
	if src := unsafe.Pointer(unsafe.SliceData(value)); uintptr(src)%8 == 0 {
		// An aligned source (a value of its own usually is) is read
		// without a bounds check per word (i+8 <= n = len(value)):
		// storeValue took 120 instructions for a 64-byte value with
		// them, 105 without (cachegrind, Set). Any architecture may
		// load an aligned word.
		for ; i+8 <= n; i += 8 {
			atomic.StoreUint64((*uint64)(unsafe.Add(p, i)), *(*uint64)(unsafe.Add(src, i)))
		}
	}
	for ; i+8 <= n; i += 8 {
		atomic.StoreUint64((*uint64)(unsafe.Add(p, i)), binary.NativeEndian.Uint64(value[i:i+8]))
	}
	if i < n {
		var w [8]byte
		copy(w[:], value[i:])
		atomic.StoreUint64((*uint64)(unsafe.Add(p, i)), binary.NativeEndian.Uint64(w[:]))
	}
}

// loadValue appends the n-byte value at v to dst with atomic word loads.
// dst grows at most once, as append would.
func loadValue(dst []byte, arena []byte, v uint32, n int) []byte {
	start := len(dst)
	if cap(dst)-start < n {
		nd := make([]byte, start, max(start+n, 2*cap(dst)))
		copy(nd, dst)
		dst = nd
	}
	dst = dst[:start+n]
	if n == 0 {
		return dst
	}
	out := dst[start:]
	p := arenaWords(arena, v, n)
	i := 0
	if o := unsafe.Pointer(unsafe.SliceData(out)); uintptr(o)%8 == 0 {
		// An aligned destination (Get's, and an empty buffer's) is
		// written two words a turn without bounds checks (i+16 <= n
		// <= len(out)): loadValue took 141 instructions for a 64-byte
		// value with them, 109 without (cachegrind, AppendGet). Any
		// architecture may store an aligned word.
		for ; i+16 <= n; i += 16 {
			*(*uint64)(unsafe.Add(o, i)) = atomic.LoadUint64((*uint64)(unsafe.Add(p, i)))
			*(*uint64)(unsafe.Add(o, i+8)) = atomic.LoadUint64((*uint64)(unsafe.Add(p, i+8)))
		}
	}
	for ; i+8 <= n; i += 8 {
		binary.NativeEndian.PutUint64(out[i:i+8], atomic.LoadUint64((*uint64)(unsafe.Add(p, i))))
	}
	if i < n {
		var b [8]byte
		binary.NativeEndian.PutUint64(b[:], atomic.LoadUint64((*uint64)(unsafe.Add(p, i))))
		copy(out[i:], b[:])
	}
	return dst
}

// markViewed sets flagViewed (see View). The caller holds the shard's lock
// shared, or reads optimistically and validates the shard's sequence count
// afterwards (a writer's read-modify-write of the meta word may then undo
// the mark, but also moves the count).
func (en entry) markViewed() {
	p := hdr64(en.s.arena, en.off+hdrMeta)
	for {
		w := atomic.LoadUint64(p)
		if w>>56&flagViewed != 0 || atomic.CompareAndSwapUint64(p, w, w|flagViewed<<56) {
			return
		}
	}
}

// recLen is the record's length in the arena.
func (en entry) recLen() int {
	kw, vl := en.lengths()
	return recSize(int(kw&maxKeyLen), int(vl), kw>>24)
}

// recSize is the arena bytes of a record with a key of klen and a value of
// vlen bytes and the given flags (flagDeadline adds the deadline word):
// header, key and value, each padded to 8 bytes so that every header and
// value is 8-byte aligned. The header is wide if flags has flagWide or the
// lengths need it (widthFlag), so that the size bounds a record's layout
// (keyAt, valueAt, which follow flags) even for lengths and flags an
// optimistic reader read from a stale arena.
func recSize(klen, vlen int, flags uint32) int {
	return int(hdrLen(flags|widthFlag(klen, vlen))) + pad8(klen) + pad8(vlen)
}

// newArena returns an empty arena of capacity n (a multiple of 8), 8-byte
// aligned: its memory is a []uint64's.
func newArena(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8)[:0]
}

func (en entry) size() int64 { return sizeOf(en.lengths()) }

// sizeOf is the accounted size of a record whose lengths are kw and vl
// (entry.lengths): a caller on a write's path writes sizeOf(en.lengths()),
// which inlines, where en.size() is a call (25 instructions).
func sizeOf(kw, vl uint32) int64 { return int64(kw&maxKeyLen) + int64(vl) + EntryOverhead }
