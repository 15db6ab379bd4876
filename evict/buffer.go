package evict

import "sync/atomic"

// Lossy, striped ring buffers that let concurrent readers hand events to the
// next write-locked operation without blocking: a reader claims a slot with
// one compare-and-swap on its stripe's tail and drops the event if the
// stripe is full or the CAS fails. The writer side (drain) runs only under
// the shard write lock, when no reader is inside Access or Miss, so every
// claimed slot has been written by then.
const (
	readStripes = 4
	readSlots   = 128 // per stripe; power of two
	missSlots   = 256
)

type readStripe struct {
	tail  atomic.Uint32
	head  uint32 // written under the write lock only
	slots [readSlots]atomic.Uint32
	_     [56]byte // keep the next stripe's tail off this cache line
}

type readBuffer [readStripes]readStripe

// push records h; it reports whether the event was kept.
func (b *readBuffer) push(h Handle) bool {
	s := &b[(uint32(h)*0x9e3779b9)>>(32-2)]
	t := s.tail.Load()
	if t-s.head >= readSlots || !s.tail.CompareAndSwap(t, t+1) {
		return false
	}
	s.slots[t&(readSlots-1)].Store(uint32(h))
	return true
}

// drain calls f for each buffered handle and empties the buffer.
func (b *readBuffer) drain(f func(Handle)) {
	for i := range b {
		s := &b[i]
		t := s.tail.Load()
		for j := s.head; j != t; j++ {
			f(Handle(s.slots[j&(readSlots-1)].Load()))
		}
		s.head = t
	}
}

type missBuffer struct {
	tail  atomic.Uint32
	head  uint32
	slots [missSlots]atomic.Uint64
}

func (b *missBuffer) push(hash uint64) bool {
	t := b.tail.Load()
	if t-b.head >= missSlots || !b.tail.CompareAndSwap(t, t+1) {
		return false
	}
	b.slots[t&(missSlots-1)].Store(hash)
	return true
}

func (b *missBuffer) drain(f func(uint64)) {
	t := b.tail.Load()
	for j := b.head; j != t; j++ {
		f(b.slots[j&(missSlots-1)].Load())
	}
	b.head = t
}
