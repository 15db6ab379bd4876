package engine

import (
	"math/bits"
	"sync/atomic"
	_ "unsafe" // go:linkname (procStripe)

	"github.com/tidekv/tide/evict"
)

// Read bookkeeping off the read's critical path.
//
// A read does not take the shard's exclusive lock, and the evict.Policy
// contract allows calls only under it. A read records its hit or miss in
// the shard's readLog instead: lossy, striped ring buffers that are
// drained into the policy under the exclusive lock (BP-Wrapper, as otter
// and Caffeine do). Three things drain it: a writer, every drainEvery-th
// time it takes the lock (shardMu.Lock, before the count turns odd: the
// drain changes no storage, so optimistic readers need not wait for it);
// every eviction, first, so that the victim is chosen knowing every logged
// read; and a reader that finds its stripe full, if it gets the lock with
// TryLock (the lock only, not the sequence count: optimistic readers
// carry on). So in a long run of reads with no writes, such as a loop over
// a cache that fits, every logged hit still reaches the policy. A reader
// whose stripe is full while the lock is taken pushes to the shard's other
// stripes of its kind: the holder may be another reader whose drain has
// already passed this stripe, and is then slow to let go of the lock if
// its goroutine is preempted (every read of a key made meanwhile was lost
// when the event was dropped instead). An event is dropped only when the
// lock is taken and every stripe of its kind is full, or when two readers
// race for the same slot. A reader picks the stripe of the P it runs on
// (procStripe, which lists when two readers still write one stripe) and
// claims a slot with one compare-and-swap. Reads under the shared lock (a key with
// a deadline, GetItem) log the same way, after releasing it. Hit and miss
// counts go to the engine's striped counters (readCounts), exact and
// summed by Stats.
//
// A policy needs to learn reads only when it may soon choose a victim. A
// shard is calm while the engine's budget has more than an eighth of its
// cap free (or there is no cap) and the shard is not filling: since its
// bytes last grew or it last evicted, it has made at least as many read
// hits and overwrites that keep an entry's size and deadline as it holds
// entries (a full pass over the shard's keys, as a static cache read or
// overwritten for a while has done). A calm shard logs one hit
// in calmSample: those whose count in its P's stripe of the hit
// counter calmPick picks, so a calm cache pays a sixteenth of the policy's
// cost per read. calmPick hashes the count rather than taking its
// multiples of calmSample, which would follow the period of a goroutine's
// reads: a loop over 16 keys would log the same key every time, and the
// policy would never learn the other 15, however hot. A hot key reaches
// the policy about once per calmSample reads, in proportion to its reads,
// so its recency and frequency stay approximately right; what a calm shard
// loses is most reads of keys read rarely, while no eviction needs them.
// Rarely means against calmSample, not against other keys: a key read R
// times while the shard is calm reaches the policy not at all with
// probability about (15/16)^R (28% at R = 20, 8% at 40), and then looks
// unread since the shard became calm to the victims chosen after it. A
// filling cache is never calm: what its policy learns while it fills
// chooses its first victims (calm after four drains without growth instead
// of a full pass, glimpse lost 6.6 points of hit ratio at 1,750 entries
// through the engine: its loops hit for a while, then grow). The shard
// decides at every drain (at least every drainEvery-th write lock, before
// every eviction, and whenever a reader drains a full stripe), reading the
// budget under the exclusive lock: once writes take the engine within an
// eighth of its cap or make a shard grow, the shard logs every hit again
// from its next drain, which comes before any eviction. A shard that
// evicts with more than an eighth free (its entries are larger than an
// eighth of the cap) chooses its first victim from sampled reads and logs
// every hit from the drain after that eviction. Misses are sampled the
// same way (the misses whose count in their stripe of the miss counter
// calmPick picks), so that the policy sees hits and misses in their true
// proportion (a hill climber reads the hit rate from them, a sketch
// compares their counts).

const (
	calmShift   = 4
	calmSample  = 1 << calmShift // a calm shard logs one hit in calmSample
	logStripes  = 4              // per shard and kind; a power of two
	accessSlots = 14             // per stripe: 8 bytes of indexes + 56 bytes of slots = one cache line
	missSlots   = 7
)

type accessStripe struct {
	tail  atomic.Uint32 // next slot to claim
	head  atomic.Uint32 // next slot to drain; written under the exclusive lock
	slots [accessSlots]atomic.Uint32
}

type missStripe struct {
	tail  atomic.Uint32
	head  atomic.Uint32
	slots [missSlots]atomic.Uint64
}

// readLog is a shard's buffer of optimistic reads for its policy. Zero
// value: empty. Safe for concurrent pushes; drained under the shard's
// exclusive lock. Memory: 576 bytes a shard.
type readLog struct {
	_      lineGuard
	access [logStripes]accessStripe
	miss   [logStripes]missStripe
}

// logPush is the outcome of a push.
type logPush uint8

const (
	logPushed logPush = iota
	logFull           // the stripe is full: drain it, then push again
	logRaced          // another reader claimed the slot first: dropped
)

// pushAccess records a read hit on slot; r picks the stripe.
func (l *readLog) pushAccess(slot uint32, r uint32) logPush {
	st := &l.access[r&(logStripes-1)]
	t := st.tail.Load()
	if t-st.head.Load() >= accessSlots {
		return logFull
	}
	if !st.tail.CompareAndSwap(t, t+1) {
		return logRaced
	}
	st.slots[t%accessSlots].Store(slot)
	return logPushed
}

// pushMiss records a read of an absent key with hash h.
func (l *readLog) pushMiss(h uint64, r uint32) logPush {
	st := &l.miss[r&(logStripes-1)]
	t := st.tail.Load()
	if t-st.head.Load() >= missSlots {
		return logFull
	}
	if !st.tail.CompareAndSwap(t, t+1) {
		return logRaced
	}
	st.slots[t%missSlots].Store(h)
	return logPushed
}

// calmPick reports whether the event with count n is handed to the policy
// under the sample mask m (shard.sample): always if m is 0, else for one
// count in calmSample. It picks by a multiplicative hash of n (its top
// calmShift bits, rotated down), not by n's multiples of calmSample, so
// that events repeating with a period (a goroutine reading a fixed cycle
// of keys, writes alternating between keys) are each picked about once in
// calmSample, whatever the period.
func calmPick(n uint64, m uint32) bool {
	return bits.RotateLeft64(n*0x9e3779b97f4a7c15, calmShift)&uint64(m) == 0
}

// logsRead reports whether a read of s that took its P's stripe
// of the hit (or miss) counter to n is logged for the policy: s has a read
// log and, while s is calm, calmPick picks n. Every counted read, hit or
// miss, lock-free or not, decides by it.
func (s *shard) logsRead(n uint64) bool {
	return s.rlog != nil && calmPick(n, s.sample.Load())
}

// logAccess logs a read hit on slot for the policy (stripe r), draining
// the log first if the stripe is full and the lock is free, else into
// another stripe with room (see the top of this file). The caller holds
// no lock of s.
func (s *shard) logAccess(slot uint32, r uint32) {
	if s.rlog.pushAccess(slot, r) != logFull {
		return
	}
	if s.drainIfFree() {
		s.rlog.pushAccess(slot, r)
		return
	}
	for k := uint32(1); k < logStripes && s.rlog.pushAccess(slot, r+k) == logFull; k++ {
	}
}

// logMiss logs a read of an absent key with hash h, as logAccess.
func (s *shard) logMiss(h uint64, r uint32) {
	if s.rlog.pushMiss(h, r) != logFull {
		return
	}
	if s.drainIfFree() {
		s.rlog.pushMiss(h, r)
		return
	}
	for k := uint32(1); k < logStripes && s.rlog.pushMiss(h, r+k) == logFull; k++ {
	}
}

// drainIfFree drains the read log if it gets s's lock at once, and
// reports whether it did. It takes the lock only, not the sequence count
// (shardMu.Lock): the drain changes nothing an optimistic reader reads.
func (s *shard) drainIfFree() bool {
	if !s.rw.TryLock() {
		return false
	}
	s.drainReadsLocked()
	s.rw.Unlock()
	return true
}

// drainReadsLocked hands the logged reads to the policy. A slot claimed by
// a reader that has not stored it yet is read stale: the event is lost or
// reported for an older slot, which is harmless for a lossy log. A slot is
// handed over as it was logged (the reader saw it tracked), without
// looking at the entry again (two cache misses an event): a policy ignores
// an Access to a handle it no longer tracks (the evict.Policy contract).
// s.rw must be held exclusively (by s.mu.Lock, or by drainIfFree).
func (s *shard) drainReadsLocked() {
	l := s.rlog
	if l == nil || s.pol == nil {
		return
	}
	s.flushPendingLocked()
	hits := 0
	for i := range l.access {
		st := &l.access[i]
		h, t := st.head.Load(), st.tail.Load()
		if h == t {
			continue // an empty stripe's line is only read: the readers keep it
		}
		for j := h; j != t; j++ {
			s.pol.Access(evict.Handle(st.slots[j%accessSlots].Load()))
		}
		hits += int(t - h)
		st.head.Store(t)
	}
	for i := range l.miss {
		st := &l.miss[i]
		h, t := st.head.Load(), st.tail.Load()
		if h == t {
			continue
		}
		for j := h; j != t; j++ {
			s.pol.Miss(st.slots[j%missSlots].Load())
		}
		st.head.Store(t)
	}
	s.sampleLocked(hits)
}

// sampleLocked decides whether s is calm (see the top of this file), hits
// being the read hits the drain that calls it handed to the policy: it
// sets s.sample to calmSample-1 if the budget has more than an eighth of
// its cap free (or there is no cap) and, since the shard last grew or
// evicted, its read hits drained and its overwrites that kept size and
// deadline (applyWriteLocked counts those) are at least as many as the
// entries it holds; else to 0 (every hit logged). s.rw must be held
// exclusively.
func (s *shard) sampleLocked(hits int) {
	if s.bytes > s.calmBytes || s.evicted != s.calmEvicted {
		// Grown since the last drain (these hits are of a filling
		// shard), or evicted: an eviction with more than an eighth of
		// the cap free (entries larger than an eighth) shows that
		// victims are being chosen, and one that takes out what the
		// write adds leaves the shard no larger.
		s.calmHits = 0
	} else if s.calmHits < s.live {
		s.calmHits += hits
	}
	s.calmBytes, s.calmEvicted = s.bytes, s.evicted
	var m uint32
	if s.calmHits >= s.live && (s.b == nil || s.b.used.Load() < s.b.max-s.b.max/8) {
		m = calmSample - 1
	}
	if s.sample.Load() != m {
		s.sample.Store(m)
	}
}

// readCounts are the engine's hit and miss counters, striped so that
// concurrent readers do not write the same cache line: a read adds to the
// stripe of the P it runs on (procStripe), Stats sums them. Exact.
type readCounts struct {
	_ lineGuard
	s [countStripes]struct {
		hits, misses atomic.Uint64
		_            [64]byte // two stripes never share a line, however aligned
	}
}

// lineGuard is the first line of a striped structure, which no stripe
// shares: a method on a pointer to the structure begins with a nil check
// that loads the structure's first byte, and a stripe there would make
// every reader of every stripe load a line that one core keeps writing
// (BenchmarkHotShard 100/0 at -cpu 2, 5 runs alternated: 60, 28, 40, 31
// and 72 ns a View with stripes by a stack hash and no guard, 27–34 with
// stripes by P and the guard; stripes by P without the guard took 62–86
// ns in 17 runs of 18, since P 0 always wrote stripe 0). readCounts is a
// field of Engine, whose nil check loads the Engine's first byte instead:
// there the guard keeps stripe 0 off the line of the Engine's fields that
// every operation reads.
type lineGuard [64]byte

const countStripes = 64 // a power of two

// count counts a read's hit or miss in stripe r.
func (c *readCounts) count(hit bool, r uint32) {
	if hit {
		c.hit(r)
	} else {
		c.miss(r)
	}
}

// hit counts a hit in stripe r and returns the stripe's hit count.
func (c *readCounts) hit(r uint32) uint64 { return c.s[r&(countStripes-1)].hits.Add(1) }

// miss counts a miss in stripe r and returns the stripe's miss count.
func (c *readCounts) miss(r uint32) uint64 { return c.s[r&(countStripes-1)].misses.Add(1) }

// countRead counts a read's hit or miss in its P's stripe.
func (e *Engine) countRead(hit bool) { e.reads.count(hit, procStripe()) }

// procStripe returns the id of the P (the runtime's processor, one of
// GOMAXPROCS) the calling goroutine runs on, which picks a reader's
// stripe of the hit counters, the read log and the View counts.
// Goroutines that run at the same time run on different Ps, so while
// GOMAXPROCS is at most the stripes of a kind (logStripes, viewStripes,
// countStripes), no two running readers write one stripe, and a stripe's
// line stays in the cache of the core that runs its P. Readers still
// write another's stripe when there are more Ps than stripes (P i and
// P i+logStripes share a log stripe), for a moment when a goroutine moves
// to another P right after the call, when a full log stripe sends a
// reader to the others, and when a reader drains the log (drainIfFree
// writes every stripe's head): a line transfer each, never a wrong count
// (every stripe is updated atomically).
//
// Tried before: a random stripe per read (rand.Uint32) made every other
// increment of a two-core reader take the line from the other core; a
// hash of an address on the goroutine's stack (a stripe per goroutine)
// made two goroutines share a stripe of some kind in about a third of
// the runs (1 in 8 for the View counts, 1 in 4 for the read log, 1 in 64
// for the counters), for the whole run: one source of the spread between
// cmd/speed runs. Cost: three calls (procStripe does not inline), about
// 20–30 instructions; a View makes one for its three stripes.
//
// runtime.procPin and procUnpin are reached with go:linkname, as packages
// the runtime lists beside them do (github.com/bytedance/gopkg and
// others); the runtime keeps those names and signatures for such callers
// (go.dev/issue/67401). sync.Pool reaches the same functions under its
// own names.
func procStripe() uint32 {
	p := procPin()
	procUnpin()
	return uint32(p)
}

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// sum returns the hits and misses counted.
func (c *readCounts) sum() (hits, misses uint64) {
	for i := range c.s {
		hits += c.s[i].hits.Load()
		misses += c.s[i].misses.Load()
	}
	return hits, misses
}

// viewCounts counts a shard's Views in progress, so that a writer can tell
// whether a record a View marked (flagViewed) may still be read in place.
// A View adds 1 to its P's stripe (procStripe) before it
// looks the key up and subtracts it from that stripe after fn returns
// (even if the goroutine runs on another P by then); a writer, holding
// the exclusive lock, overwrites a marked record in place only if every
// stripe is 0 (none), else it appends a new record.
//
// Why that is safe, in the non-atomic pseudocode of the two sides (every
// step an atomic operation, sequentially consistent as sync/atomic's are):
//
//	View:   views[i]++; seq0 = seq; (find, mark, check seq == seq0); fn(value); views[i]--
//	writer: seq++ (odd, in Lock); if sum(views) == 0 { overwrite in place }
//
// If the writer read a stripe as 0, the View's increment comes after the
// writer's seq++ in the order of all atomic operations, so the View's first
// read of seq sees the writer's odd count (or a later one), and the View
// hands out nothing it read before the write: it validates against a count
// that stays the same only while no writer works. Otherwise the writer saw
// the View and appends. A View's fn that writes the key it views (allowed)
// sees its own count and appends too. A shard whose views pointer is still
// nil has had no View, hence no marked record. Memory: 576 bytes a shard
// that has been viewed.
//
// A line per shard and stripe, not one table of per-shard counters with a
// row per stripe: such rows (tried on 2026-12-04) saved a View 0.24
// first-level misses at 1M keys (3.86 → 3.62, cachegrind) but made
// the capped View mixes 2–7% slower at -cpu 2 (cmd/speed child runs,
// alternated, every pair): a writer's none reads the other core's row,
// which that core rewrites at every View of any of 16 shards, not only at
// one of this shard.
type viewCounts struct {
	_ lineGuard
	s [viewStripes]struct {
		n atomic.Int64
		_ [56]byte // one line a stripe
	}
}

const viewStripes = 8 // a power of two

// enter counts a View in stripe r (its P's, procStripe) and returns the
// counter to subtract from when the View ends.
func (v *viewCounts) enter(r uint32) *atomic.Int64 {
	c := &v.s[r&(viewStripes-1)].n
	c.Add(1)
	return c
}

// none reports whether no View of the shard is in progress (v is nil
// before the shard's first View). The caller holds the shard's exclusive
// lock (so the sequence count is odd).
func (v *viewCounts) none() bool {
	if v == nil {
		return true
	}
	for i := range v.s {
		if v.s[i].n.Load() != 0 {
			return false
		}
	}
	return true
}

// viewCountsLoad returns the shard's View counts, allocating them on the
// shard's first View.
func (s *shard) viewCountsLoad() *viewCounts {
	if v := s.views.Load(); v != nil {
		return v
	}
	return s.viewCountsAlloc()
}

// viewCountsAlloc is viewCountsLoad's first View of the shard, apart so
// that viewCountsLoad inlines.
func (s *shard) viewCountsAlloc() *viewCounts {
	s.views.CompareAndSwap(nil, new(viewCounts))
	return s.views.Load()
}
