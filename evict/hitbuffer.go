package evict

import "sync/atomic"

// hitBuffer is a lossy, striped ring buffer of read hits that, unlike
// readBuffer, may be drained while readers push: a policy whose Access
// finds the buffer full can replay it there (under its own lock, taken
// with TryLock) instead of dropping the hit, as Caffeine and otter do when
// their read buffer fills. A reader claims a slot with one
// compare-and-swap on its stripe's tail and then stores the handle plus
// one; a slot reads 0 while it is claimed but not yet written, and drain
// stops there (the next drain resumes from it). The reader drops the event
// if its stripe is full or the CAS fails.
//
// Zero value: empty. Concurrency: push is safe for concurrent use; drain
// must be called by one goroutine at a time (the shard's write lock, or
// the policy's drain lock), and may run concurrently with push. Memory:
// 4 × 128 × 4 bytes plus padding, about 2.3 KiB.
type hitBuffer [readStripes]hitStripe

type hitStripe struct {
	tail  atomic.Uint32
	head  atomic.Uint32 // written by the drainer only
	slots [readSlots]atomic.Uint32
	_     [56]byte // keep the next stripe's indexes off this cache line
}

// push records a hit on h; it reports whether the event was kept.
func (b *hitBuffer) push(h Handle) bool {
	s := &b[(uint32(h)*0x9e3779b9)>>(32-2)]
	t := s.tail.Load()
	if t-s.head.Load() >= readSlots || !s.tail.CompareAndSwap(t, t+1) {
		return false
	}
	s.slots[t&(readSlots-1)].Store(uint32(h) + 1)
	return true
}

// drain calls f for each buffered handle, in order per stripe, up to the
// first slot claimed by a reader that has not written it yet.
func (b *hitBuffer) drain(f func(Handle)) {
	for i := range b {
		s := &b[i]
		t := s.tail.Load()
		j := s.head.Load()
		for ; j != t; j++ {
			slot := &s.slots[j&(readSlots-1)]
			v := slot.Load()
			if v == 0 {
				break
			}
			// Cleared before head moves past it: a reader can claim this
			// slot again only after the head's store below.
			slot.Store(0)
			f(Handle(v - 1))
		}
		s.head.Store(j)
	}
}
