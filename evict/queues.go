package evict

// queues is the per-handle bookkeeping shared by the segmented policies
// (W-TinyLFU, S3-FIFO): each tracked handle's hash, size and segment, and
// intrusive doubly linked lists over handles, one per segment, so that
// moving an entry between segments costs O(1) and no allocation. Arrays
// are indexed by Handle and hold no pointers.
type queues struct {
	hash       []uint64
	size       []int64
	prev, next []uint32
	seg        []uint8 // segNone, or the queue the handle is in
	q          [4]queue
}

// grow makes room for handle h and reports the new length, or 0 if no
// growth was needed.
func (l *queues) grow(h Handle) int {
	if int(h) < len(l.seg) {
		return 0
	}
	n := growLen(h, len(l.seg))
	l.prev, l.next = resize(l.prev, n), resize(l.next, n)
	l.hash, l.size, l.seg = resize(l.hash, n), resize(l.size, n), resize(l.seg, n)
	return n
}

func resize[T any](s []T, n int) []T {
	t := make([]T, n)
	copy(t, s)
	return t
}

func (l *queues) tracked(h Handle) bool { return int(h) < len(l.seg) && l.seg[h] != segNone }

// link puts h at the head (most recent end) of queue s.
func (l *queues) link(h Handle, s uint8) {
	q := &l.q[s]
	l.seg[h] = s
	l.prev[h] = none
	l.next[h] = q.head
	if q.head != none {
		l.prev[q.head] = uint32(h)
	} else {
		q.tail = uint32(h)
	}
	q.head = uint32(h)
	q.bytes += l.size[h]
	q.n++
}

// unlink removes h from its queue.
func (l *queues) unlink(h Handle) {
	q := &l.q[l.seg[h]]
	pr, nx := l.prev[h], l.next[h]
	if pr != none {
		l.next[pr] = nx
	} else {
		q.head = nx
	}
	if nx != none {
		l.prev[nx] = pr
	} else {
		q.tail = pr
	}
	q.bytes -= l.size[h]
	q.n--
	l.seg[h] = segNone
}

// checkQueues verifies queues from..to of a policy named name: each list's
// links, segment tags, length and bytes, and that it has no cycle. It
// returns the number of handles and bytes they hold.
func (l *queues) checkQueues(name string, from, to uint8) (n int, total int64, err error) {
	for s := from; s <= to; s++ {
		q := l.q[s]
		cnt, bytes := 0, int64(0)
		prev := none
		for h := q.head; h != none; h = l.next[h] {
			if l.seg[h] != s || l.prev[h] != prev {
				return 0, 0, errorf("%s: handle %d in queue %d: seg %d prev %d want %d", name, h, s, l.seg[h], l.prev[h], prev)
			}
			prev = h
			cnt++
			bytes += l.size[h]
			if cnt > len(l.seg) {
				return 0, 0, errorf("%s: cycle in queue %d", name, s)
			}
		}
		if q.tail != prev || cnt != q.n || bytes != q.bytes {
			return 0, 0, errorf("%s: queue %d: tail %d/%d n %d/%d bytes %d/%d", name, s, q.tail, prev, q.n, cnt, q.bytes, bytes)
		}
		n += cnt
		total += bytes
	}
	return n, total, nil
}
