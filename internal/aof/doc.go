// Package aof is tide's durability machinery: an append-only log of
// mutation records with group commit, fsync policies, crash-safe rewrite
// (compaction), recovery, and a snapshot format. It knows nothing of the
// engine: the engine appends a Record for each mutation and replays
// Records on recovery.
//
// # Directory
//
// A log is a directory holding a MANIFEST and the files it names, as in
// Redis 7's multi-part AOF: at most one base (a snapshot of the live
// entries, written by a rewrite) and one or more incremental logs, replayed
// in that order; appends go to the last incremental log. The manifest is
// replaced only atomically (temporary file, fsync, rename, directory
// fsync), so at any instant the directory describes a complete log. Other
// files with the log's names are debris of an interrupted step, removed by
// Open; files with other names are left alone. A manifest over 1 MiB (read
// no further), or naming anything but the log's own file names, is
// corrupt; and the log opens no symbolic link in place of its files (where
// the platform has O_NOFOLLOW), so that a link planted in the directory
// cannot make it write or cut a file outside it. While a log is open its
// directory is locked (flock on LOCK; ErrLocked for a second opener), as
// two writers would interleave their appends.
//
// # Record format
//
// Every file starts with a 16-byte header: 8 bytes of magic ("tide-aof" for
// an incremental log, "tide-snp" for a base or snapshot), the format
// version (uint32, 1) and the CRC-32C of those 12 bytes. Records follow as
// frames. All integers are little endian.
//
//	frame     length uint32      payload bytes, 1 .. MaxRecordSize
//	          crc    uint32      CRC-32C (Castagnoli) of length and payload
//	          payload
//
//	payload   type  fields
//	OpSet      1    flags u8 (bit 0: pinned), version u64, deadline i64,
//	                key length u32, value length u32, key, value
//	OpRemove   2    cause u8 (1 deleted, 2 expired, 3 evicted), version u64,
//	                key length u32, key
//	OpMeta     3    flags u8, deadline i64, key length u32, key
//	OpVersions 4    count u32, count × version u64
//	OpBatch    5    count u32, count × (OpSet | OpRemove | OpMeta payload)
//	end        7    records u64, CRC-32C of every byte before (snapshots)
//
// Deadlines are absolute wall-clock instants in Unix nanoseconds, 0 for
// none. The encoding is canonical: a payload decodes only if re-encoding
// it gives the same bytes (unknown flags, causes or trailing bytes are
// corruption), which is what the fuzz targets check.
//
// A Commit is one OpBatch: one frame, one checksum, so recovery applies
// all of it or none. Versions are never reused across restarts: every set
// carries its version, a rewrite's base starts with the version counters
// (OpVersions), and Recovery.MaxVersion is the highest of all of them.
//
// # Durability contract
//
// An append is acknowledged (Append returns nil) once its record is
// written to the file (SyncEverySecond, SyncNo) or written and fsynced
// (SyncAlways). What a crash can lose:
//
//	policy           process crash (kill -9)    OS crash or power loss
//	SyncAlways       nothing acknowledged       nothing acknowledged
//	SyncEverySecond  nothing acknowledged       about the last SyncInterval
//	                                            (1 s) of acknowledged appends
//	SyncNo           nothing acknowledged       whatever the OS had not
//	                                            written back (Linux: up to
//	                                            about 30 s)
//
// The SyncEverySecond window assumes fsyncs complete: a disk on which one
// takes longer widens it by that long (appends are not held back while a
// background fsync runs).
//
// In every case what survives is a prefix of the log: never a later record
// without an earlier one, never part of a batch. Open makes what it
// replayed durable before returning, so a recovered state is not lost
// again by a later power failure.
//
// Failures: a write that fails (EIO, ENOSPC, a short write) fails its
// appends with the error and is cut off again, so the log stays usable
// and the next record starts at a frame boundary; if it cannot be cut off
// the log fails. A failed fsync fails the log: every later append returns
// ErrFailed until the log is reopened (after a failed fsync Linux may have
// dropped the dirty pages and cleared the error, so no later fsync could
// prove them durable). The appends of a failed fsync may or may not
// survive a crash: their outcome is unknown, which the caller must report
// as such.
//
// # Recovery
//
// Open replays the base and the incremental logs in order. A frame that is
// invalid (bad length or checksum, undecodable) at the end of the last
// incremental log is a torn tail (a partial write, a zero-filled or
// garbage extent a crash left) if no valid frame starts anywhere after it,
// or if it is a write cut short: its length runs past the end of the file
// and agrees with its payload's own fields as far as they are present
// (record type, flags, key and value lengths, a batch's count and ops), so
// that whatever follows its start, even the bytes of a valid frame stored
// in a value, is the write the crash cut (TestTornTailWithAFrameInsideItsValue).
// A torn tail is cut off and counted in Recovery.TornBytes. Any other
// invalid frame followed by a valid one is corruption: Open fails with a
// *CorruptError naming the file and offset (errors.Is ErrCorrupt), or,
// with Config.TruncateCorrupt, cuts the log there, discards the later
// incremental logs and reports what it discarded. A length field damaged
// in the middle of the log does not pass for a cut write: the payload
// after it is complete, and its fields end the record where the old length
// did (TestCutShortFrames). Damage to the base or the manifest is always an
// error: they were complete and synced before they were used.
//
// Damage costs Open no memory: a frame's length is checked against
// MaxRecordSize and the bytes left in its file before anything is read, a
// frame is held in memory whole only once its checksum (computed in
// pieces) matches, and the scans past a damaged frame read through a
// bounded window. So Open allocates in proportion to the valid records it
// reads, never to what a damaged or crafted length field claims nor to the
// size of a damaged file.
//
// Recovery delivers records as written and then, for every key the replay
// left with a deadline at or before the now it was given, an OpRemove with
// CauseExpired (Recovery.Due counts them), so no due entry is restored and
// a TTL extended before the crash is honoured.
//
// # Rewrite
//
// Rewrite replaces the base and incremental logs with a new base holding
// the live entries and the incremental log appends went to meanwhile. It
// switches appends to a fresh incremental log first (a pause of a few
// fsyncs), then writes the base from the engine's iterator while appends
// continue, then switches the manifest. Each step is crash-safe; see
// Log.Rewrite for the argument, and TestRewriteCrashAtEveryStep, which
// crashes at every file operation of a rewrite.
//
// # Snapshots
//
// WriteSnapshot and ReadSnapshot move the live entries through any
// io.Writer and io.Reader (a file, an object store): header, the version
// counters, the entries, and an end marker with the record count and a
// checksum of everything before it. A snapshot cut short is ErrTruncated;
// one with frames lost, reordered or damaged is ErrCorrupt.
package aof
