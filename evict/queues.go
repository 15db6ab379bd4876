package evict

import "encoding/binary"

// queues is the per-handle bookkeeping shared by the segmented policies
// (W-TinyLFU, S3-FIFO): each tracked handle's key fingerprint, size and
// segment, and intrusive doubly linked lists over handles, one per
// segment, so that moving an entry between segments costs O(1) and no
// allocation. The nodes are indexed by Handle, paged (see pages) and hold
// no pointers.
//
// Memory: 14 bytes per handle (a node), plus a map entry for each entry of
// 64 KiB or more, whose size does not fit in 16 bits.
type queues struct {
	nodes pages[node]
	big   map[Handle]int64 // the sizes of the nodes whose size is sizeBig
	q     [4]queue
}

// node is one handle's state, packed in 14 bytes: little-endian uint32s
// prev, next and tag, then a uint16 size. A hit reads the handle's links
// and tag and, on a move between queues, its size: one cache line of its
// own (two for the nodes that straddle a line, about one in five), where a
// separate size array made it two; a struct would be padded to 16 bytes.
//
//   - prev, next: the neighbours in the handle's queue, or none;
//   - tag: the fingerprint of the entry's key (fingerprint) above the
//     segment in the low 2 bits (segNone, or the queue the handle is in);
//   - size: the entry's size, or sizeBig: the size is in queues.big.
type node [14]byte

func (n *node) prev() uint32         { return binary.LittleEndian.Uint32(n[0:4]) }
func (n *node) next() uint32         { return binary.LittleEndian.Uint32(n[4:8]) }
func (n *node) tag() uint32          { return binary.LittleEndian.Uint32(n[8:12]) }
func (n *node) size() uint16         { return binary.LittleEndian.Uint16(n[12:14]) }
func (n *node) setPrev(v uint32)     { binary.LittleEndian.PutUint32(n[0:4], v) }
func (n *node) setNext(v uint32)     { binary.LittleEndian.PutUint32(n[4:8], v) }
func (n *node) setTag(v uint32)      { binary.LittleEndian.PutUint32(n[8:12], v) }
func (n *node) setSize(v uint16)     { binary.LittleEndian.PutUint16(n[12:14], v) }
func (n *node) seg() uint8           { return uint8(n[8] & segMask) }
func (n *node) setLinks(p, x uint32) { n.setPrev(p); n.setNext(x) }

// sizeBig in a node's size says the size is in queues.big.
const sizeBig = 1<<16 - 1

// fingerprint is the 30-bit key of a hash that the policies keep per entry
// and feed their sketch and ghost queue: the hash's top bits (the engine
// picks shards by the low ones, so those are alike within a shard). Two
// keys of a shard share it with probability 2⁻³⁰, less than they share
// sketch counters.
func fingerprint(hash uint64) uint32 { return uint32(hash >> 34) }

const segMask = 3

// grow makes room for handle h and reports whether it had to.
func (l *queues) grow(h Handle) bool { return l.nodes.grow(h) }

func (l *queues) tracked(h Handle) bool {
	return int(h) < l.nodes.len() && l.nodes.at(h).seg() != segNone
}

func (l *queues) seg(h Handle) uint8 { return l.nodes.at(h).seg() }

func (l *queues) fp(h Handle) uint32 { return l.nodes.at(h).tag() >> 2 }

// setFP records h's fingerprint, keeping its segment.
func (l *queues) setFP(h Handle, fp uint32) {
	n := l.nodes.at(h)
	n.setTag(fp<<2 | uint32(n.seg()))
}

func (l *queues) sizeOf(h Handle) int64 { return l.nodeSize(h, l.nodes.at(h)) }

// nodeSize is sizeOf(h) for h's node n.
func (l *queues) nodeSize(h Handle, n *node) int64 {
	if s := n.size(); s != sizeBig {
		return int64(s)
	}
	return l.big[h]
}

// setSize records h's size (negative counts as 0).
func (l *queues) setSize(h Handle, s int64) {
	s = max(s, 0)
	n := l.nodes.at(h)
	if n.size() == sizeBig {
		delete(l.big, h)
	}
	if s < sizeBig {
		n.setSize(uint16(s))
		return
	}
	n.setSize(sizeBig)
	if l.big == nil {
		l.big = map[Handle]int64{}
	}
	l.big[h] = s
}

// forgetSize drops the size of an untracked handle.
func (l *queues) forgetSize(h Handle) {
	if n := l.nodes.at(h); n.size() == sizeBig {
		delete(l.big, h)
		n.setSize(0)
	}
}

// link puts h at the head (most recent end) of queue s.
func (l *queues) link(h Handle, s uint8) {
	q := &l.q[s]
	n := l.nodes.at(h)
	n.setTag(n.tag()&^segMask | uint32(s))
	n.setLinks(none, q.head)
	if q.head != none {
		l.nodes.at(Handle(q.head)).setPrev(uint32(h))
	} else {
		q.tail = uint32(h)
	}
	q.head = uint32(h)
	q.bytes += l.nodeSize(h, n)
	q.n++
}

// toFront moves h, whose node is n, to the head of its queue s: what
// unlink and link do, without the queue's length and bytes (which do not
// change, so h's size is not read), and nothing if h is the head already.
func (l *queues) toFront(h Handle, n *node, s uint8) {
	q := &l.q[s]
	if q.head == uint32(h) {
		return
	}
	pr, nx := n.prev(), n.next() // pr is not none: h is not the head
	l.nodes.at(Handle(pr)).setNext(nx)
	if nx != none {
		l.nodes.at(Handle(nx)).setPrev(pr)
	} else {
		q.tail = pr
	}
	n.setLinks(none, q.head)
	l.nodes.at(Handle(q.head)).setPrev(uint32(h))
	q.head = uint32(h)
}

// unlink removes h from its queue.
func (l *queues) unlink(h Handle) {
	n := l.nodes.at(h)
	q := &l.q[n.seg()]
	pr, nx := n.prev(), n.next()
	if pr != none {
		l.nodes.at(Handle(pr)).setNext(nx)
	} else {
		q.head = nx
	}
	if nx != none {
		l.nodes.at(Handle(nx)).setPrev(pr)
	} else {
		q.tail = pr
	}
	q.bytes -= l.nodeSize(h, n)
	q.n--
	n.setTag(n.tag() &^ segMask) // segNone
}

// checkQueues verifies queues from..to of a policy named name: each list's
// links, segment tags, length and bytes, and that it has no cycle; and
// that the large sizes are exactly those of the big map. It returns the
// number of handles and bytes they hold.
func (l *queues) checkQueues(name string, from, to uint8) (n int, total int64, err error) {
	for s := from; s <= to; s++ {
		q := l.q[s]
		cnt, bytes := 0, int64(0)
		prev := none
		for h := q.head; h != none; h = l.nodes.at(Handle(h)).next() {
			nd := l.nodes.at(Handle(h))
			if nd.seg() != s || nd.prev() != prev {
				return 0, 0, errorf("%s: handle %d in queue %d: seg %d prev %d want %d", name, h, s, nd.seg(), nd.prev(), prev)
			}
			prev = h
			cnt++
			bytes += l.sizeOf(Handle(h))
			if cnt > l.nodes.len() {
				return 0, 0, errorf("%s: cycle in queue %d", name, s)
			}
		}
		if q.tail != prev || cnt != q.n || bytes != q.bytes {
			return 0, 0, errorf("%s: queue %d: tail %d/%d n %d/%d bytes %d/%d", name, s, q.tail, prev, q.n, cnt, q.bytes, bytes)
		}
		n += cnt
		total += bytes
	}
	for h, s := range l.big {
		if int(h) >= l.nodes.len() || l.nodes.at(h).size() != sizeBig || s < sizeBig || !l.tracked(h) {
			return 0, 0, errorf("%s: large size %d of handle %d does not match", name, s, h)
		}
	}
	return n, total, nil
}
