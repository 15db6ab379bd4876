package evict

import "sync/atomic"

// S3FIFO is the S3-FIFO policy (Yang et al., "FIFO queues are all you need
// for cache eviction", SOSP 2023).
//
// The policy has three FIFO queues and a 2-bit read counter per entry, no
// LRU reordering.
//
// New entries go to a small FIFO queue (10% of the cap) unless their key's
// hash is in the ghost queue, in which case they go straight to the main
// queue. When the small queue is over its share, its oldest entry is
// evicted (and its hash remembered in the ghost queue) unless it was read
// more than once, in which case it moves to the main queue. The main queue
// is a CLOCK: its oldest entry is evicted if it was not read since it was
// last considered, else its counter drops by one and it goes back to the
// head. Most one-hit wonders thus leave the cache after a short stay in the
// small queue.
//
// Concurrency: Access is one atomic load and, unless the counter is already
// at 3, one store to the entry's own counter; no buffers, no locks, no
// shared writes. Miss does nothing.
//
// Cost: Access and Miss O(1); Add, Update, Remove O(1); Victim O(1)
// amortized (each entry it skips paid for it with a read). Memory: 16
// bytes per entry (list links, key fingerprint and queue, size, counter;
// see queues) plus, per ghost fingerprint, 4 bytes of ring and a map
// entry: about 32 bytes per entry in all once the ghost is full, measured
// by TestPolicyMemoryPerEntry.
//
// Choose it when read throughput matters most and the workload has many
// one-hit wonders (web and object caches); TinyLFU usually wins on
// frequency-skewed and looping workloads.
var S3FIFO = Spec{Name: "s3fifo", New: newS3FIFOPolicy}

func newS3FIFOPolicy(shardBytes int64) Policy { return newS3FIFO(shardBytes) }

const (
	s3Small     = 0.10 // share of the cap for the small queue
	s3MaxFreq   = 3
	s3Promote   = 1 // a small-queue entry read more than this moves to main
	s3GhostMult = 1 // ghost holds about as many hashes as main holds entries
)

// s3fifoPolicy is the policy of S3FIFO, whose doc describes it.
type s3fifoPolicy struct {
	hint    int64
	maximum int64
	total   int64
	count   int

	queues               // seg: segNone, s3S, s3M
	freq   pages[uint32] // read counter, accessed atomically by Access

	ghost     []uint32 // ring of fingerprints
	ghostHead int
	ghostLen  int
	ghostSet  map[uint32]uint32
}

const (
	s3S uint8 = 1
	s3M uint8 = 2
)

// newS3FIFO returns an empty S3-FIFO policy for a shard whose cap is
// shardBytes; zero or negative means unknown (the cap is then the largest
// total size seen).
func newS3FIFO(shardBytes int64) *s3fifoPolicy {
	p := &s3fifoPolicy{hint: shardBytes, maximum: max(shardBytes, 0), ghostSet: map[uint32]uint32{}}
	for i := range p.q {
		p.q[i] = queue{head: none, tail: none}
	}
	return p
}

// grow makes room for h. It runs under the shard write lock, so no Access
// reads the counters it copies.
func (p *s3fifoPolicy) grow(h Handle) {
	p.queues.grow(h)
	p.freq.grow(h)
}

func (p *s3fifoPolicy) loadFreq(h Handle) uint32     { return atomic.LoadUint32(p.freq.at(h)) }
func (p *s3fifoPolicy) storeFreq(h Handle, f uint32) { atomic.StoreUint32(p.freq.at(h), f) }

// ghostAdd remembers fingerprint fp, forgetting the oldest when the ring
// is full.
func (p *s3fifoPolicy) ghostAdd(fp uint32) {
	limit := max(16, s3GhostMult*p.count)
	if len(p.ghost) < limit {
		n := max(16, min(limit, 2*len(p.ghost)))
		g := make([]uint32, n)
		for i := range p.ghostLen {
			g[i] = p.ghost[(p.ghostHead+i)%len(p.ghost)]
		}
		p.ghost, p.ghostHead = g, 0
	}
	for p.ghostLen >= min(limit, len(p.ghost)) {
		p.ghostPop()
	}
	p.ghost[(p.ghostHead+p.ghostLen)%len(p.ghost)] = fp
	p.ghostLen++
	p.ghostSet[fp]++
}

func (p *s3fifoPolicy) ghostPop() {
	old := p.ghost[p.ghostHead]
	p.ghostHead = (p.ghostHead + 1) % len(p.ghost)
	p.ghostLen--
	if c := p.ghostSet[old]; c <= 1 {
		delete(p.ghostSet, old)
	} else {
		p.ghostSet[old] = c - 1
	}
}

// Add implements Policy.
func (p *s3fifoPolicy) Add(h Handle, e Entry) {
	if p.tracked(h) {
		p.Update(h, e)
		return
	}
	p.grow(h)
	fp := fingerprint(e.Hash)
	p.setFP(h, fp)
	p.setSize(h, e.Size)
	p.storeFreq(h, 0)
	p.total += p.sizeOf(h)
	p.count++
	if p.hint <= 0 {
		p.maximum = max(p.maximum, p.total)
	}
	if p.ghostSet[fp] > 0 {
		// Seen recently and evicted from the small queue too early. The
		// hash stays in the ghost ring until it ages out.
		p.link(h, s3M)
		return
	}
	p.link(h, s3S)
}

// Update implements Policy; a write counts as a read.
func (p *s3fifoPolicy) Update(h Handle, e Entry) {
	if !p.tracked(h) {
		p.Add(h, e)
		return
	}
	d := max(e.Size, 0) - p.sizeOf(h)
	p.setSize(h, e.Size)
	p.q[p.seg(h)].bytes += d
	p.total += d
	p.setFP(h, fingerprint(e.Hash))
	p.Access(h)
}

// Remove implements Policy.
func (p *s3fifoPolicy) Remove(h Handle) {
	if !p.tracked(h) {
		return
	}
	p.unlink(h)
	p.total -= p.sizeOf(h)
	p.forgetSize(h)
	p.count--
}

// Access implements Policy. It is safe for concurrent use and never blocks.
func (p *s3fifoPolicy) Access(h Handle) {
	if int(h) >= p.freq.len() {
		return
	}
	if f := p.loadFreq(h); f < s3MaxFreq {
		p.storeFreq(h, f+1)
	}
}

// Miss implements Policy; S3-FIFO ignores misses.
func (p *s3fifoPolicy) Miss(uint64) {}

// Victim implements Policy.
func (p *s3fifoPolicy) Victim(int64) (Handle, bool) {
	if p.count == 0 {
		return 0, false
	}
	small := int64(s3Small * float64(p.maximum))
	// Each pass either returns or moves an entry that has a read to spend,
	// so the loop ends; the bound is a safety net.
	for range 4*p.count + 4 {
		s, m := p.q[s3S].tail, p.q[s3M].tail
		if s != none && (p.q[s3S].bytes >= small || m == none) {
			if p.loadFreq(Handle(s)) > s3Promote {
				p.unlink(Handle(s))
				p.storeFreq(Handle(s), 0)
				p.link(Handle(s), s3M)
				continue
			}
			p.ghostAdd(p.fp(Handle(s)))
			return Handle(s), true
		}
		if m == none {
			break
		}
		if f := p.loadFreq(Handle(m)); f > 0 {
			p.storeFreq(Handle(m), f-1)
			p.toFront(Handle(m), p.nodes.at(Handle(m)), s3M)
			continue
		}
		return Handle(m), true
	}
	if t := p.q[s3M].tail; t != none {
		return Handle(t), true
	}
	return Handle(p.q[s3S].tail), true
}

// Len reports how many entries the policy tracks.
func (p *s3fifoPolicy) Len() int { return p.count }

func (p *s3fifoPolicy) check() error {
	n, total, err := p.checkQueues("s3fifo", s3S, s3M)
	if err != nil {
		return err
	}
	if n != p.count || total != p.total {
		return errorf("s3fifo: count %d/%d total %d/%d", p.count, n, p.total, total)
	}
	sum := uint32(0)
	for _, c := range p.ghostSet {
		sum += c
	}
	if int(sum) != p.ghostLen || p.ghostLen > len(p.ghost) {
		return errorf("s3fifo: ghost set counts %d, ring %d/%d", sum, p.ghostLen, len(p.ghost))
	}
	return nil
}
