package engine

import (
	"encoding/binary"
	"iter"
	"time"

	"github.com/tidekv/tide/evict"
)

// Get returns a copy of key's value.
func (e *Engine) Get(key string) ([]byte, bool) {
	return e.AppendGet(nil, key)
}

// AppendGet appends key's value to dst and returns the extended buffer. It
// allocates nothing when dst has room.
func (e *Engine) AppendGet(dst []byte, key string) ([]byte, bool) {
	s, h := e.shardFor(key)
	s.mu.RLock()
	slot, ok := s.findLocked(key, h)
	if !ok {
		if s.pol != nil {
			s.pol.Miss(h)
		}
		s.mu.RUnlock()
		s.misses.Add(1)
		return dst, false
	}
	off := s.ents[slot] - 1
	hd := s.arena[off : off+hdrSize : off+hdrSize]
	if d := int64(binary.LittleEndian.Uint64(hd[hdrDeadline:])); d != 0 && e.now() >= d {
		s.mu.RUnlock()
		e.expireNow(s, key, h)
		s.misses.Add(1)
		return dst, false
	}
	kf := binary.LittleEndian.Uint32(hd[hdrKlen:])
	v := off + hdrSize + kf&maxKeyLen
	dst = append(dst, s.arena[v:v+binary.LittleEndian.Uint32(hd[hdrVlen:])]...)
	if kf>>24&flagTracked != 0 {
		s.pol.Access(evict.Handle(slot))
	}
	s.mu.RUnlock()
	s.hits.Add(1)
	return dst, true
}

// GetItem returns a copy of key's value with its version and TTL.
func (e *Engine) GetItem(key string) (Item, bool) {
	s, h := e.shardFor(key)
	s.mu.RLock()
	slot, ok := s.findLocked(key, h)
	if !ok {
		if s.pol != nil {
			s.pol.Miss(h)
		}
		s.mu.RUnlock()
		s.misses.Add(1)
		return Item{}, false
	}
	en := s.at(slot)
	var now int64
	if en.deadline() != 0 {
		now = e.now()
		if now >= en.deadline() {
			s.mu.RUnlock()
			e.expireNow(s, key, h)
			s.misses.Add(1)
			return Item{}, false
		}
	}
	it := itemOf(en, now)
	if en.flags()&flagTracked != 0 {
		s.pol.Access(evict.Handle(slot))
	}
	s.mu.RUnlock()
	s.hits.Add(1)
	return it, true
}

func itemOf(en entry, now int64) Item {
	it := Item{Value: append([]byte{}, en.value()...), Version: en.version(), TTL: NoTTL, Pinned: en.flags()&flagPinned != 0}
	if d := en.deadline(); d != 0 {
		it.TTL = time.Duration(d - now)
	}
	return it
}

// TTL reports the time left before key expires: ok is false if the key does
// not exist; ttl is NoTTL if it exists without expiry.
func (e *Engine) TTL(key string) (ttl time.Duration, ok bool) {
	it, ok := e.peek(key)
	return it.TTL, ok
}

// peek reads key's metadata without copying its value or counting a hit.
func (e *Engine) peek(key string) (Item, bool) {
	s, h := e.shardFor(key)
	s.mu.RLock()
	slot, ok := s.findLocked(key, h)
	if !ok {
		s.mu.RUnlock()
		return Item{}, false
	}
	en := s.at(slot)
	it := Item{Version: en.version(), TTL: NoTTL, Pinned: en.flags()&flagPinned != 0}
	if d := en.deadline(); d != 0 {
		now := e.now()
		if now >= d {
			s.mu.RUnlock()
			e.expireNow(s, key, h)
			return Item{}, false
		}
		it.TTL = time.Duration(d - now)
	}
	s.mu.RUnlock()
	return it, true
}

// All returns an iterator over the live entries: key and a copy of the
// value. It never yields a due entry (and removes those it passes, as any
// read does). Iteration is weakly consistent, like sync.Map's Range: it
// locks one shard at a time and yields outside the lock, so entries written
// during the iteration may or may not be seen. It does not count hits.
func (e *Engine) All() iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		for k, it := range e.Items() {
			if !yield(k, it.Value) {
				return
			}
		}
	}
}

// Items is All with each entry's Item (version and TTL).
func (e *Engine) Items() iter.Seq2[string, Item] {
	return func(yield func(string, Item) bool) {
		type kv struct {
			k  string
			it Item
		}
		const batch = 256
		buf := make([]kv, 0, batch)
		var due []string
		for i := range e.shards {
			s := &e.shards[i]
			for next := 0; ; {
				buf, due = buf[:0], due[:0]
				s.mu.RLock()
				now := e.now()
				for ; next < len(s.ents) && len(buf) < batch; next++ {
					if s.ents[next] == 0 {
						continue
					}
					en := s.at(uint32(next))
					if d := en.deadline(); d != 0 && now >= d {
						due = append(due, string(en.key()))
						continue
					}
					buf = append(buf, kv{string(en.key()), itemOf(en, now)})
				}
				end := next >= len(s.ents)
				s.mu.RUnlock()
				for _, k := range due {
					_, h := e.shardFor(k)
					e.expireNow(s, k, h)
				}
				for _, p := range buf {
					if !yield(p.k, p.it) {
						return
					}
				}
				if end {
					break
				}
			}
		}
	}
}

// expireNow removes key if it is (still) due: lazy expiry, upgraded to the
// exclusive lock.
func (e *Engine) expireNow(s *shard, key string, h uint64) {
	var ev []Removal
	evp := e.events(&ev)
	s.mu.Lock()
	if slot, ok := s.findLocked(key, h); ok && !s.closed {
		// A reader saw this entry due at its now; e.now() is at least that.
		if d := s.at(slot).deadline(); d != 0 && e.now() >= d {
			s.removeLocked(slot, h, Expired, evp)
		}
	}
	s.mu.Unlock()
	e.deliver(ev)
}

// lookupLocked finds key for a writer, removing it first if it is due. It
// returns the slot and whether a live entry exists.
func (s *shard) lookupLocked(key string, h uint64, now int64, ev *[]Removal) (uint32, bool) {
	slot, ok := s.findLocked(key, h)
	if ok {
		if d := s.at(slot).deadline(); d != 0 && now >= d {
			s.removeLocked(slot, h, Expired, ev)
			return 0, false
		}
	}
	return slot, ok
}
