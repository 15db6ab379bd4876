package sim

import "container/heap"

// OPT is Bélády's clairvoyant policy with bypass (the "MIN" of Bélády 1966
// and Mattson et al. 1970): on a miss with the cache full, of the cached
// keys and the missed key it drops the one whose next reference is
// farthest in the future, which may be the missed key itself (it is then
// not inserted). It needs the whole trace in advance, so it is an upper
// bound on the hit ratio of any policy that stores on a miss (and of any
// that may decline to), not a cache one can use.
//
// Cost: O(n) to precompute each access's next reference, then O(log
// capacity) per access (a max-heap of next references with lazy deletion;
// stale heap entries are skipped when popped).
type OPT struct {
	keys []uint64
	next []int32 // next[i]: index of the next access to keys[i], or len(keys)
	i    int     // index of the next Access
	cap  int
	in   map[uint64]int32 // cached key → its current next reference
	h    optHeap
}

// NewOPT returns OPT for the trace keys at capacity entries. Its Access
// must be called with keys in order; a key that does not match the trace
// panics (a misuse, not a data condition).
func NewOPT(keys []uint64, capacity int) *OPT {
	next := make([]int32, len(keys))
	last := make(map[uint64]int32, 1024)
	for i := len(keys) - 1; i >= 0; i-- {
		if j, ok := last[keys[i]]; ok {
			next[i] = j
		} else {
			next[i] = int32(len(keys))
		}
		last[keys[i]] = int32(i)
	}
	return &OPT{keys: keys, next: next, cap: max(capacity, 1), in: make(map[uint64]int32, capacity)}
}

// Access implements Cache.
func (o *OPT) Access(k uint64) bool {
	if o.i >= len(o.keys) || o.keys[o.i] != k {
		panic("sim: OPT accessed out of trace order")
	}
	nx := o.next[o.i]
	o.i++
	_, hit := o.in[k]
	if hit {
		o.in[k] = nx
		heap.Push(&o.h, optItem{nx, k})
		return true
	}
	if nx == int32(len(o.keys)) {
		return false // never used again: bypass
	}
	if len(o.in) >= o.cap {
		// Pop stale entries until the top is a live key's current next.
		for {
			top := o.h[0]
			if cur, ok := o.in[top.key]; ok && cur == top.next {
				break
			}
			heap.Pop(&o.h)
		}
		if o.h[0].next <= nx {
			return false // the missed key is the farthest: bypass
		}
		top := heap.Pop(&o.h).(optItem)
		delete(o.in, top.key)
	}
	o.in[k] = nx
	heap.Push(&o.h, optItem{nx, k})
	return false
}

// Close implements Cache.
func (o *OPT) Close() {}

type optItem struct {
	next int32
	key  uint64
}

// optHeap is a max-heap on next.
type optHeap []optItem

func (h optHeap) Len() int           { return len(h) }
func (h optHeap) Less(i, j int) bool { return h[i].next > h[j].next }
func (h optHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *optHeap) Push(x any)        { *h = append(*h, x.(optItem)) }
func (h *optHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// OPTContender is Bélády's OPT (an oracle: it reads the trace ahead).
var OPTContender = Contender{Name: "OPT", Oracle: true, NewTrace: func(keys []uint64, n int) Cache { return NewOPT(keys, n) }}
