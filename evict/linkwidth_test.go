package evict

import (
	"fmt"
	"slices"
	"testing"
)

// TestLinksAtTheWidthBoundaryMatchNarrowOnes drives each segmented policy
// with handles on both sides of the first wide link (the limit less two,
// less one, the limit itself, one more, far above it) and a few narrow
// ones: adds, hits, updates that move a size into and out of the big map,
// removals (a wide head or tail among them, and a queue whose only member
// is wide) and evictions. With the limit lowered, the victims and every
// queue's order must be those of narrow links; Check holds after each
// step; and once every handle is gone the wide map is nil again, so the
// narrow paths resume.
func TestLinksAtTheWidthBoundaryMatchNarrowOnes(t *testing.T) {
	const limit = 64
	handles := []Handle{0, 1, limit - 2, limit - 1, limit, limit + 1, 2 * limit, 3*limit + 5}
	for _, spec := range []Spec{TinyLFU, S3FIFO, Adaptive} {
		t.Run(spec.Name, func(t *testing.T) {
			type trace struct {
				victims []Handle
				orders  [][]uint32
			}
			run := func(lim uint32) trace {
				old := linkLimit
				linkLimit = lim
				defer func() { linkLimit = old }()
				p := spec.New(40)
				c := p.(interface{ check() error })
				var l *queues
				switch q := p.(type) {
				case *tinyLFUPolicy:
					l = &q.queues
				case *adaptivePolicy:
					l = &q.queues
				case *s3fifoPolicy:
					l = &q.queues
				}
				var tr trace
				wideSeen := 0
				r := rng{s: 17}
				in := map[Handle]bool{}
				step := func(i int, what string) {
					if err := c.check(); err != nil {
						t.Fatalf("limit %d, step %d (%s): %v", lim, i, what, err)
					}
					var o []uint32
					for s := range l.q {
						for h := l.q[s].head; h != none; h = l.next(Handle(h), l.nodes.at(Handle(h))) {
							o = append(o, h)
						}
						o = append(o, none)
					}
					tr.orders = append(tr.orders, o)
					wideSeen = max(wideSeen, len(l.wide))
				}
				// A queue whose only member is wide, then gone.
				p.Add(limit, Entry{Hash: mix64(limit), Size: 1})
				step(-2, "add a lone wide handle")
				p.Remove(limit)
				step(-1, "remove it")
				if l.wide != nil {
					t.Fatalf("limit %d: wide map %v kept with no handle", lim, l.wide)
				}
				for i := range 3000 {
					h := handles[r.intn(len(handles))]
					size := int64(1 + r.intn(8))
					if r.intn(20) == 0 {
						size = sizeBig + int64(r.intn(3))
					}
					var what string
					switch op := r.intn(10); {
					case !in[h] || op == 0:
						what = "add"
						p.Add(h, Entry{Hash: mix64(uint64(h)*7 + uint64(r.intn(3))), Size: size})
						in[h] = true
					case op < 5:
						what = "access"
						p.Access(h)
					case op < 7:
						what = "update"
						p.Update(h, Entry{Hash: mix64(uint64(h) * 7), Size: size})
					case op < 8:
						what = "remove"
						p.Remove(h)
						delete(in, h)
					default:
						what = "evict"
						v, ok := p.Victim(0)
						if !ok {
							t.Fatalf("limit %d, step %d: no victim with %d tracked", lim, i, len(in))
						}
						tr.victims = append(tr.victims, v)
						p.Remove(v)
						delete(in, v)
					}
					step(i, what)
				}
				for h := range in {
					p.Remove(h)
				}
				step(3000, "remove all")
				if lim == limit && wideSeen == 0 {
					t.Fatalf("limit %d: no wide link during the run", lim)
				}
				if l.wide != nil {
					t.Fatalf("limit %d: wide map %v kept after every handle left", lim, l.wide)
				}
				return tr
			}
			narrow, wide := run(linkWide), run(limit)
			if !slices.Equal(narrow.victims, wide.victims) {
				t.Fatalf("victims differ at %d of %d", firstDiff(narrow.victims, wide.victims), len(narrow.victims))
			}
			for i := range narrow.orders {
				if !slices.Equal(narrow.orders[i], wide.orders[i]) {
					t.Fatalf("step %d: queues %v with wide links, want %v", i-2, wide.orders[i], narrow.orders[i])
				}
			}
		})
	}
}

// TestCopyAsKeepsWideLinksApart guards the copy an Adaptive restart makes
// of a miniature cache while some of its links are wide: the copy has its
// own wide map, so emptying the source leaves the copy's queues whole (in
// the order the source had) and its Check passing, and the other way
// round.
func TestCopyAsKeepsWideLinksApart(t *testing.T) {
	old := linkLimit
	linkLimit = 4
	defer func() { linkLimit = old }()
	orders := func(p *tinyLFUPolicy) string {
		return fmt.Sprint(order(p, segWindow), order(p, segProbation), order(p, segProtected))
	}
	src, dst := newTinyLFU(200), newTinyLFU(200)
	for h := range Handle(40) {
		src.Add(h, Entry{Hash: mix64(uint64(h)), Size: 3})
		if h%3 == 0 {
			src.Access(h / 2)
		}
	}
	for h := range Handle(10) {
		dst.Add(h+50, Entry{Hash: mix64(uint64(h) + 99), Size: 1})
	}
	if len(src.wide) == 0 {
		t.Fatal("no wide link in the source")
	}
	want := orders(src)
	dst.copyAs(src, adaptiveConfigs[0])
	for h := range Handle(40) {
		src.Remove(h)
		if err := dst.check(); err != nil {
			t.Fatalf("copy after the source removed %d: %v", h, err)
		}
	}
	if got := orders(dst); got != want {
		t.Fatalf("copy's queues %s, want %s", got, want)
	}
	if src.wide != nil {
		t.Fatalf("emptied source keeps wide links %v", src.wide)
	}
	for h := range Handle(40) {
		dst.Remove(h)
	}
	if err := dst.check(); err != nil {
		t.Fatal(err)
	}
	if dst.wide != nil || dst.count != 0 {
		t.Fatalf("emptied copy: %d entries, wide links %v", dst.count, dst.wide)
	}
}

// TestCheckCatchesAWideLinkWithoutItsMapEntry guards Check's promise to
// verify the raw links: a node link marked wide must have its handle in
// queues.wide. Without the entry the link decodes as handle 0 (the map's
// zero value), which the walk cannot tell from a real link to handle 0,
// and the narrow paths would index the node linkWide.
func TestCheckCatchesAWideLinkWithoutItsMapEntry(t *testing.T) {
	for _, i := range []int{0, 1} {
		l := &queues{}
		for s := range l.q {
			l.q[s] = queue{head: none, tail: none}
		}
		for _, h := range []Handle{0, 1, 2} {
			l.grow(h)
			l.setSize(h, 1)
		}
		// Queue 1 from its head: 2, 0, 1; handle 0's links are 2 and 1.
		l.link(1, 1)
		l.link(0, 1)
		l.link(2, 1)
		if _, _, err := l.checkQueues("corrupt", 1, 1); err != nil {
			t.Fatal(err)
		}
		n := l.nodes.at(1)
		if i == 1 {
			n = l.nodes.at(2)
		}
		// Handle 1's prev (i 0) or handle 2's next (i 1) is handle 0:
		// mark it wide, with no map entry.
		if i == 0 {
			n.setPrevRaw(linkWide)
		} else {
			n.setNextRaw(linkWide)
		}
		if _, _, err := l.checkQueues("corrupt", 1, 1); err == nil {
			t.Errorf("link %d: Check passes a wide link with no entry in the wide map", i)
		}
	}
}

// TestCheckCatchesABigSizeWithoutItsMapEntry guards the same promise for
// sizes: a node whose size says sizeBig must have its size in queues.big
// (without it the size reads as 0, which the queue's bytes may match).
func TestCheckCatchesABigSizeWithoutItsMapEntry(t *testing.T) {
	l := &queues{}
	for s := range l.q {
		l.q[s] = queue{head: none, tail: none}
	}
	l.grow(0)
	l.setSize(0, 0)
	l.link(0, 1)
	l.nodes.at(0).setSize(sizeBig)
	if _, _, err := l.checkQueues("corrupt", 1, 1); err == nil {
		t.Error("Check passes a node sized sizeBig with no entry in the big map")
	}
}
