package evict

// queues is the per-handle bookkeeping shared by the segmented policies
// (W-TinyLFU, S3-FIFO): each tracked handle's key fingerprint, size and
// segment, and intrusive doubly linked lists over handles, one per
// segment, so that moving an entry between segments costs O(1) and no
// allocation. The nodes are indexed by Handle, paged (see pages) and hold
// no pointers.
//
// Memory: 12 bytes per handle (a node), plus a map entry for each entry of
// 64 KiB or more, whose size does not fit in 16 bits, and one for each
// node linked to a handle of 2^24 − 2 or more (a shard of more than 16
// million entries), whose number does not fit in a 24-bit link.
type queues struct {
	nodes pages[node]
	big   map[Handle]int64     // the sizes of the nodes whose size is sizeBig
	wide  map[Handle][2]uint32 // the prev and next of the nodes with a linkWide link (none where the link is not wide)
	q     [4]queue
}

// node is one handle's state, packed in three 32-bit words (12 bytes):
// a 24-bit link prev and the low byte of a 16-bit size, a 24-bit link
// next and the size's high byte, and a tag. A hit reads the handle's
// links and tag and, on a move between queues, its size: one cache line
// of its own (two for the nodes that straddle a line, about one in six),
// where a separate size array made it two.
//
//   - prev, next: the neighbours in the handle's queue (raw links: see
//     linkNone and linkWide, and queues.prev);
//   - tag: the fingerprint of the entry's key (fingerprint) above the
//     segment in the low 2 bits (segNone, or the queue the handle is in);
//   - size: the entry's size, or sizeBig: the size is in queues.big.
type node [3]uint32

func (n *node) prevRaw() uint32     { return n[0] & linkMask }
func (n *node) nextRaw() uint32     { return n[1] & linkMask }
func (n *node) setPrevRaw(v uint32) { n[0] = n[0]&^linkMask | v }
func (n *node) setNextRaw(v uint32) { n[1] = n[1]&^linkMask | v }

// link returns the raw link i (0 prev, 1 next).
func (n *node) link(i int) uint32 { return n[i&1] & linkMask }

func (n *node) tag() uint32     { return n[2] }
func (n *node) setTag(v uint32) { n[2] = v }
func (n *node) seg() uint8      { return uint8(n[2] & segMask) }
func (n *node) size() uint16    { return uint16(n[0]>>24 | n[1]>>24<<8) }
func (n *node) setSize(v uint16) {
	n[0] = n[0]&linkMask | uint32(v)<<24
	n[1] = n[1]&linkMask | uint32(v>>8)<<24
}

// Raw link values: a handle below linkLimit is stored as itself; none as
// linkNone; any other handle as linkWide, with the handle in queues.wide.
const (
	linkMask = 1<<24 - 1
	linkNone = 1<<24 - 1
	linkWide = 1<<24 - 2
)

// linkLimit is the first handle stored as linkWide: linkWide, or lower in
// tests, so that they exercise the wide links without 16 million handles.
var linkLimit uint32 = linkWide

// prev and next return h's neighbours; n is h's node. The common case (a
// narrow link) is inlined; wideLink decodes the others.
func (l *queues) prev(h Handle, n *node) uint32 {
	if v := n.prevRaw(); v < linkLimit {
		return v
	}
	return l.wideLink(h, n.prevRaw(), 0)
}

func (l *queues) next(h Handle, n *node) uint32 {
	if v := n.nextRaw(); v < linkLimit {
		return v
	}
	return l.wideLink(h, n.nextRaw(), 1)
}

// wideLink decodes h's raw link i, v, which is linkNone or linkWide.
func (l *queues) wideLink(h Handle, v uint32, i int) uint32 {
	if v == linkNone {
		return none
	}
	return l.wide[h][i]
}

// setPrev and setNext set h's neighbours; n is h's node. The common case
// (no wide link in the queues, a narrow or no neighbour) is inlined;
// setLinkSlow does the rest.
func (l *queues) setPrev(h Handle, n *node, v uint32) {
	if l.wide == nil && v+1 <= linkLimit { // v < linkLimit or v == none (v+1 wraps to 0)
		n.setPrevRaw(v & linkMask)
		return
	}
	l.setLinkSlow(h, n, 0, v)
}

func (l *queues) setNext(h Handle, n *node, v uint32) {
	if l.wide == nil && v+1 <= linkLimit { // v < linkLimit or v == none (v+1 wraps to 0)
		n.setNextRaw(v & linkMask)
		return
	}
	l.setLinkSlow(h, n, 1, v)
}

// setLinks sets both of h's links.
func (l *queues) setLinks(h Handle, n *node, p, x uint32) {
	l.setPrev(h, n, p)
	l.setNext(h, n, x)
}

// setLinkSlow sets h's link i to v, keeping queues.wide exact: an entry
// for h while one of its links is linkWide, with none for a link that
// is not.
func (l *queues) setLinkSlow(h Handle, n *node, i int, v uint32) {
	if l.wide != nil && n.link(i) == linkWide {
		w := l.wide[h]
		if w[i] = none; w[1-i] == none {
			if delete(l.wide, h); len(l.wide) == 0 {
				l.wide = nil // the narrow paths resume
			}
		} else {
			l.wide[h] = w
		}
	}
	raw := v
	switch {
	case v == none:
		raw = linkNone
	case v >= linkLimit:
		if l.wide == nil {
			l.wide = map[Handle][2]uint32{}
		}
		w, ok := l.wide[h]
		if !ok {
			w = [2]uint32{none, none}
		}
		w[i] = v
		l.wide[h] = w
		raw = linkWide
	}
	if i == 0 {
		n.setPrevRaw(raw)
	} else {
		n.setNextRaw(raw)
	}
}

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
	if !l.narrow(h, q) {
		l.linkWide(h, s)
		return
	}
	n := l.nodes.at(h)
	n.setTag(n.tag()&^segMask | uint32(s))
	n.setPrevRaw(linkNone)
	n.setNextRaw(q.head & linkMask)
	if q.head != none {
		l.nodes.at(Handle(q.head)).setPrevRaw(uint32(h))
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
	if !l.narrow(h, q) {
		l.toFrontWide(h, n, s)
		return
	}
	pr, nx := n.prevRaw(), fromRaw(n.nextRaw()) // pr is not none: h is not the head
	l.nodes.at(Handle(pr)).setNextRaw(nx & linkMask)
	if nx != none {
		l.nodes.at(Handle(nx)).setPrevRaw(pr)
	} else {
		q.tail = pr
	}
	n.setPrevRaw(linkNone)
	n.setNextRaw(q.head)
	l.nodes.at(Handle(q.head)).setPrevRaw(uint32(h))
	q.head = uint32(h)
}

// unlink removes h from its queue, leaving its links none.
func (l *queues) unlink(h Handle) {
	n := l.nodes.at(h)
	q := &l.q[n.seg()]
	if !l.narrow(h, q) {
		l.unlinkWide(h, n, q)
		return
	}
	pr, nx := fromRaw(n.prevRaw()), fromRaw(n.nextRaw())
	if pr != none {
		l.nodes.at(Handle(pr)).setNextRaw(nx & linkMask)
	} else {
		q.head = nx
	}
	if nx != none {
		l.nodes.at(Handle(nx)).setPrevRaw(pr & linkMask)
	} else {
		q.tail = pr
	}
	n.setPrevRaw(linkNone)
	n.setNextRaw(linkNone)
	q.bytes -= l.nodeSize(h, n)
	q.n--
	n.setTag(n.tag() &^ segMask) // segNone
}

// narrow reports whether link, toFront and unlink may treat every link
// they touch as raw: no node has a wide link, and h and the head of its
// queue q (the only handles they store that they did not read from a
// link) are below linkLimit. linkWide, toFrontWide and unlinkWide do the
// same with links of any width.
func (l *queues) narrow(h Handle, q *queue) bool {
	return l.wide == nil && uint32(h) < linkLimit && q.head+1 <= linkLimit // q.head+1 wraps to 0 for none
}

// fromRaw decodes a raw link known not to be linkWide.
func fromRaw(v uint32) uint32 {
	if v == linkNone {
		return none
	}
	return v
}

func (l *queues) linkWide(h Handle, s uint8) {
	q := &l.q[s]
	n := l.nodes.at(h)
	n.setTag(n.tag()&^segMask | uint32(s))
	l.setLinks(h, n, none, q.head)
	if q.head != none {
		l.setPrev(Handle(q.head), l.nodes.at(Handle(q.head)), uint32(h))
	} else {
		q.tail = uint32(h)
	}
	q.head = uint32(h)
	q.bytes += l.nodeSize(h, n)
	q.n++
}

func (l *queues) toFrontWide(h Handle, n *node, s uint8) {
	q := &l.q[s]
	pr, nx := l.prev(h, n), l.next(h, n) // pr is not none: h is not the head
	l.setNext(Handle(pr), l.nodes.at(Handle(pr)), nx)
	if nx != none {
		l.setPrev(Handle(nx), l.nodes.at(Handle(nx)), pr)
	} else {
		q.tail = pr
	}
	l.setLinks(h, n, none, q.head)
	l.setPrev(Handle(q.head), l.nodes.at(Handle(q.head)), uint32(h))
	q.head = uint32(h)
}

func (l *queues) unlinkWide(h Handle, n *node, q *queue) {
	pr, nx := l.prev(h, n), l.next(h, n)
	if pr != none {
		l.setNext(Handle(pr), l.nodes.at(Handle(pr)), nx)
	} else {
		q.head = nx
	}
	if nx != none {
		l.setPrev(Handle(nx), l.nodes.at(Handle(nx)), pr)
	} else {
		q.tail = pr
	}
	l.setLinks(h, n, none, none)
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
		for h := q.head; h != none; h = l.next(Handle(h), l.nodes.at(Handle(h))) {
			nd := l.nodes.at(Handle(h))
			if p := l.prev(Handle(h), nd); nd.seg() != s || p != prev {
				return 0, 0, errorf("%s: handle %d in queue %d: seg %d prev %d want %d", name, h, s, nd.seg(), p, prev)
			}
			for i := range 2 {
				if v := nd.link(i); v >= linkLimit && v != linkNone && v != linkWide {
					return 0, 0, errorf("%s: handle %d: raw link %d is %d, not below %d", name, h, i, v, linkLimit)
				} else if w, ok := l.wide[Handle(h)]; v == linkWide && (!ok || w[i] == none) {
					return 0, 0, errorf("%s: handle %d: raw link %d is wide, with no entry in the wide map", name, h, i)
				}
			}
			if _, ok := l.big[Handle(h)]; nd.size() == sizeBig && !ok {
				return 0, 0, errorf("%s: handle %d: size is in the big map, which has no entry for it", name, h)
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
	for h, w := range l.wide {
		if int(h) >= l.nodes.len() || !l.tracked(h) {
			return 0, 0, errorf("%s: wide links %v of untracked handle %d", name, w, h)
		}
		for i, v := range w {
			if f := l.nodes.at(h).link(i); (f == linkWide) != (v != none) || v != none && v < linkLimit {
				return 0, 0, errorf("%s: wide link %d of handle %d is %d, its node's link %d", name, i, h, v, f)
			}
		}
	}
	return n, total, nil
}
