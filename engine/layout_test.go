package engine

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/tidekv/tide/evict"
)

// recordOf returns the flags and arena length of key's record.
func recordOf(t *testing.T, e *Engine, key string) (flags uint32, recLen int) {
	t.Helper()
	s, h := e.shardFor(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	slot, ok := s.findLocked(key, h)
	if !ok {
		t.Fatalf("%q is not stored", key)
	}
	en := s.at(slot)
	return en.flags(), en.recLen()
}

// A record without a TTL has no deadline word (a 16-byte header); every
// way of giving an existing key a TTL moves it to a record with one, keeps
// its value and version, and the key then expires; clearing the TTL keeps
// the word (0) until the arena is rebuilt, which drops it.
func TestRecordHasADeadlineWordOnlyWithATTL(t *testing.T) {
	const key, value = "a-16-byte-key-00", "a value of 24 bytes....."
	bare := hdrSize + pad8(len(key)) + pad8(len(value))
	withTTL := hdrSize + 8 + pad8(len(key)) + pad8(len(value))
	tests := []struct {
		name string
		ttl  func(e *Engine) error
	}{
		{"Expire", func(e *Engine) error { _, err := e.Expire(key, time.Minute, ExpireConditionAlways); return err }},
		{"GetAndExpire", func(e *Engine) error { _, _, err := e.GetAndExpire(key, time.Minute); return err }},
		// The same value length, which would otherwise be overwritten in place.
		{"SetTTL", func(e *Engine) error { _, err := e.SetTTL(key, []byte(value), time.Minute); return err }},
		{"Commit", func(e *Engine) error {
			_, _, err := e.Commit(nil, []Op{{Key: key, Value: []byte(value), TTL: time.Minute}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, clk := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: evict.Adaptive})
			v0, err := e.Set(key, []byte(value))
			if err != nil {
				t.Fatal(err)
			}
			if f, n := recordOf(t, e, key); f&flagDeadline != 0 || n != bare {
				t.Fatalf("a record written without a TTL: flags %b, %d bytes; want no deadline word, %d bytes", f, n, bare)
			}
			if err := tt.ttl(e); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, e)
			if f, n := recordOf(t, e, key); f&flagDeadline == 0 || n != withTTL {
				t.Fatalf("after %s: flags %b, %d bytes; want a deadline word, %d bytes", tt.name, f, n, withTTL)
			}
			it, ok := e.GetItem(key)
			if !ok || string(it.Value) != value || it.TTL != time.Minute {
				t.Fatalf("after %s: GetItem = %q, TTL %v, %v; want %q, TTL 1m", tt.name, it.Value, it.TTL, ok, value)
			}
			if tt.name != "SetTTL" && tt.name != "Commit" && it.Version != v0 {
				t.Fatalf("after %s: version %d, want %d (a TTL change keeps it)", tt.name, it.Version, v0)
			}
			if ok, err := e.Persist(key); !ok || err != nil {
				t.Fatalf("Persist = %v, %v", ok, err)
			}
			if ttl, ok := e.TTL(key); !ok || ttl != NoTTL {
				t.Fatalf("TTL after Persist = %v, %v; want NoTTL", ttl, ok)
			}
			// Expire again: the record kept its word, so no move.
			if _, err := e.Expire(key, time.Minute, ExpireConditionAlways); err != nil {
				t.Fatal(err)
			}
			s := &e.shards[0]
			s.mu.Lock()
			garbage := s.garbage
			s.mu.Unlock()
			if garbage != bare {
				t.Fatalf("garbage %d after the moves, want %d: a TTL on a record that has the word must not move it", garbage, bare+withTTL)
			}
			clk.Advance(time.Minute)
			if _, ok := e.Get(key); ok {
				t.Fatal("the key outlived its TTL")
			}
			mustCheck(t, e)

			// Persist, then rebuild the arena: the word goes.
			if _, err := e.Set(key, []byte(value)); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Expire(key, time.Minute, ExpireConditionAlways); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Persist(key); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			s.rebuildLocked(len(s.arena)-s.garbage+1024, false)
			s.mu.Unlock()
			mustCheck(t, e)
			if f, n := recordOf(t, e, key); f&flagDeadline != 0 || n != bare {
				t.Fatalf("after a rebuild of a record without TTL: flags %b, %d bytes; want no deadline word, %d bytes", f, n, bare)
			}
			if got, ok := e.Get(key); !ok || string(got) != value {
				t.Fatalf("Get after the rebuild = %q, %v", got, ok)
			}
		})
	}
}

// A View whose callback gives the viewed key a TTL (which moves its record)
// keeps the bytes it was given, and readers find the key at its new record.
func TestViewKeepsItsBytesWhenTheKeyGetsATTL(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	want := bytes.Repeat([]byte{'v'}, 40)
	if _, err := e.Set("k", want); err != nil {
		t.Fatal(err)
	}
	ok := e.View("k", func(v []byte) {
		if _, err := e.Expire("k", time.Hour, ExpireConditionAlways); err != nil {
			t.Error(err)
		}
		if ttl, ok := e.TTL("k"); !ok || ttl != time.Hour {
			t.Errorf("TTL inside View = %v, %v; want 1h", ttl, ok)
		}
		if _, err := e.Set("k", bytes.Repeat([]byte{'w'}, 40)); err != nil {
			t.Error(err)
		}
		if !bytes.Equal(v, want) {
			t.Errorf("View's bytes changed when the key moved: %q", v)
		}
	})
	if !ok {
		t.Fatal("View missed")
	}
	if got, ok := e.Get("k"); !ok || string(got) != string(bytes.Repeat([]byte{'w'}, 40)) {
		t.Fatalf("Get = %q, %v", got, ok)
	}
}

// storeValue writes every length's bytes exactly, from a source at every
// alignment, zero-pads the last word, and touches nothing past it;
// loadValue reads them back, appending to a destination at every
// alignment, with room or without, keeps what the destination held and
// writes nothing past the value. Sources and destinations are cut from
// 8-aligned buffers filled with marker bytes, so that a word read past
// the source's end shows as non-zero padding and a word written past the
// value as a changed marker.
func TestStoreValueRoundTripsEveryLength(t *testing.T) {
	const srcMark, dstMark = 0xa5, 0x5a
	for n := 0; n <= 41; n++ {
		for shift := range 8 {
			arena := make([]byte, 64)
			for i := range arena {
				arena[i] = 0xff
			}
			src := make([]uint64, 8) // 64 bytes, 8-aligned
			sb := unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), 64)
			for i := range sb {
				sb[i] = srcMark
			}
			value := sb[shift : shift+n : shift+n]
			for i := range value {
				value[i] = byte(i + 1)
			}
			storeValue(arena, 8, value)
			for i := 8 + n; i < 8+pad8(n); i++ {
				if arena[i] != 0 {
					t.Fatalf("len %d, source at +%d: padding byte %d is %#x, want 0", n, shift, i, arena[i])
				}
			}
			for i, b := range append(arena[:8:8], arena[8+pad8(n):]...) {
				if b != 0xff {
					t.Fatalf("len %d, source at +%d: byte %d outside the value changed to %#x", n, shift, i, b)
				}
			}
			if got := loadValue(nil, arena, 8, n); !bytes.Equal(got, value) {
				t.Fatalf("len %d, source at +%d: got %v, want %v", n, shift, got, value)
			}
			for _, roomy := range []bool{false, true} {
				prefix := []byte("abcdefg")[:shift]
				dst := append([]byte(nil), prefix...)
				if roomy {
					d := make([]uint64, 8) // 64 bytes of room, 8-aligned
					db := unsafe.Slice((*byte)(unsafe.Pointer(&d[0])), 64)
					for i := range db {
						db[i] = dstMark
					}
					dst = append(db[:0], prefix...)
				}
				want := append(append([]byte(nil), prefix...), value...)
				got := loadValue(dst, arena, 8, n)
				if !bytes.Equal(got, want) {
					t.Fatalf("len %d, destination at +%d (room %v): got %v, want %v", n, shift, roomy, got, want)
				}
				if roomy {
					for i, b := range got[len(got):cap(got)] {
						if b != dstMark {
							t.Fatalf("len %d, destination at +%d: byte %d past the value changed to %#x", n, shift, len(got)+i, b)
						}
					}
				}
			}
		}
	}
}

// TestSlotHintFollowsEveryStore guards the remembered slot word: get
// answers the remembered slot from the copy, a store to that slot through
// set updates the copy, a store to another slot leaves it, and a zeroed
// copy of the array remembers nothing.
func TestSlotHintFollowsEveryStore(t *testing.T) {
	var a slots
	for range 3 * slotPage {
		a.push()
	}
	const s1, s2 = slotPage + 5, 2*slotPage + 1
	a.set(s1, 10)
	a.set(s2, 20)
	a.remember(s1, 10)
	steps := []struct {
		name   string
		do     func()
		s1, s2 uint32
	}{
		{"remembered", func() {}, 10, 20},
		{"store to the remembered slot", func() { a.set(s1, 11) }, 11, 20},
		{"store to another slot", func() { a.set(s2, 21) }, 11, 21},
		{"freed", func() { a.set(s1, 0) }, 0, 21},
		{"reused", func() { a.set(s1, 12) }, 12, 21},
		{"another slot remembered", func() { a.remember(s2, 21); a.set(s1, 13) }, 13, 21},
	}
	for _, st := range steps {
		st.do()
		if got1, got2 := a.get(s1), a.get(s2); got1 != st.s1 || got2 != st.s2 {
			t.Fatalf("%s: got %d, %d, want %d, %d", st.name, got1, got2, st.s1, st.s2)
		}
		if !a.checkHint() {
			t.Fatalf("%s: the remembered word is not the page's", st.name)
		}
	}
	a.lastWord++ // what a store that bypassed set would leave
	if a.checkHint() {
		t.Fatal("checkHint accepts a remembered word the page does not hold")
	}
	a.lastWord--
	if z := a.zeroed(); z.last != 0 || z.get(s2) != 0 {
		t.Fatalf("zeroed remembers slot %d (word %d)", z.last, z.get(s2))
	}
}

// TestSlotsKeepEverySlotAcrossPages guards the paged slot array: slots
// pushed across several pages keep their words, zeroed has as many slots,
// all free, and no page holds more than a quarter of a page unused.
func TestSlotsKeepEverySlotAcrossPages(t *testing.T) {
	for _, n := range []int{1, slotPage - 1, slotPage, slotPage + 1, 5*slotPage + 17} {
		var a slots
		for i := range n {
			if got := a.push(); got != uint32(i) {
				t.Fatalf("n=%d: push %d returned slot %d", n, i, got)
			}
			a.set(uint32(i), uint32(i)*7+1)
		}
		if a.len() != n {
			t.Fatalf("n=%d: len %d", n, a.len())
		}
		capacity := 0
		for i := range n {
			if got, want := a.get(uint32(i)), uint32(i)*7+1; got != want {
				t.Fatalf("n=%d: slot %d holds %d, want %d", n, i, got, want)
			}
		}
		for _, pg := range a.p {
			capacity += cap(pg)
		}
		if unused := capacity - n; unused > max(16, slotPage/4) {
			t.Errorf("n=%d: %d slots allocated, %d unused", n, capacity, unused)
		}
		z := a.zeroed()
		if z.len() != n {
			t.Fatalf("n=%d: zeroed len %d", n, z.len())
		}
		for i := range n {
			if z.get(uint32(i)) != 0 {
				t.Fatalf("n=%d: zeroed slot %d is %d", n, i, z.get(uint32(i)))
			}
		}
		z.set(0, 99)
		if a.get(0) == 99 {
			t.Fatalf("n=%d: zeroed shares memory with its source", n)
		}
	}
}

// A record's header is compact (16 bytes) for a key of up to 255 bytes and
// a value of up to 65,535, wide (24) beyond either; a TTL adds its word to
// both. Every write keeps the width the lengths require: an overwrite in
// place only by a value of the record's width, a move to a new record
// (overwrite, TTL, arena rebuild) takes the width of what it holds. Each
// step checks the record's width and length, the value read back by Get,
// View and GetItem, and Check.
func TestRecordWidthFollowsTheLengths(t *testing.T) {
	key := func(n int) string { return string(bytes.Repeat([]byte{'k'}, n)) }
	val := func(n int) []byte { return bytes.Repeat([]byte{byte(n)}, n) }
	type step struct {
		klen, vlen int
		ttl        bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"compact at both limits", []step{{255, 65535, false}}},
		{"key one past", []step{{256, 0, false}}},
		{"value one past", []step{{1, 65536, false}}},
		{"empty key and value", []step{{0, 0, false}}},
		{"compact with a TTL", []step{{255, 65535, true}}},
		{"wide with a TTL", []step{{256, 65536, true}}},
		// 65529..65535 pad to 65536: the same padded length, so only the
		// width keeps the overwrite out of place.
		{"grows to wide in its padding", []step{{16, 65530, false}, {16, 65536, false}}},
		{"shrinks to compact", []step{{16, 70000, false}, {16, 8, false}}},
		{"shrinks within wide", []step{{300, 70000, false}, {300, 69000, false}, {300, 3, false}}},
		{"shrinks within compact", []step{{16, 65535, false}, {16, 100, false}}},
		{"wide gets a TTL", []step{{16, 70000, false}, {16, 70000, true}, {16, 5, true}}},
		{"compact gets a TTL, then wide", []step{{16, 8, false}, {16, 8, true}, {16, 65536, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 1, MaxBytes: 16 << 20, Policy: evict.Adaptive})
			for i, st := range tt.steps {
				k, v := key(st.klen), val(st.vlen)
				var err error
				if st.ttl {
					_, err = e.SetTTL(k, v, time.Hour)
				} else {
					_, err = e.Set(k, v)
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				mustCheck(t, e)
				hdr := 16
				if st.klen > 255 || st.vlen > 65535 {
					hdr = 24
				}
				if st.ttl {
					hdr += 8
				}
				f, n := recordOf(t, e, k)
				if want := hdr + pad8(st.klen) + pad8(st.vlen); n != want {
					t.Errorf("step %d (%d-byte key, %d-byte value, ttl %v): record of %d bytes, flags %b; want %d", i, st.klen, st.vlen, st.ttl, n, f, want)
				}
				if got, ok := e.Get(k); !ok || !bytes.Equal(got, v) {
					t.Fatalf("step %d: Get = %d bytes, %v; want %d bytes", i, len(got), ok, len(v))
				}
				if !e.View(k, func(got []byte) {
					if !bytes.Equal(got, v) {
						t.Errorf("step %d: View saw %d bytes, want %d", i, len(got), len(v))
					}
				}) {
					t.Fatalf("step %d: View missed", i)
				}
				it, ok := e.GetItem(k)
				if wantTTL := map[bool]time.Duration{false: NoTTL, true: time.Hour}[st.ttl]; !ok || !bytes.Equal(it.Value, v) || it.TTL != wantTTL {
					t.Fatalf("step %d: GetItem = %d bytes, TTL %v, %v; want %d bytes, TTL %v", i, len(it.Value), it.TTL, ok, len(v), wantTTL)
				}
			}
			s := &e.shards[0]
			s.mu.Lock()
			s.rebuildLocked(len(s.arena)-s.garbage+1024, false)
			s.mu.Unlock()
			mustCheck(t, e)
			last := tt.steps[len(tt.steps)-1]
			if got, ok := e.Get(key(last.klen)); !ok || !bytes.Equal(got, val(last.vlen)) {
				t.Fatalf("after a rebuild: Get = %d bytes, %v; want %d", len(got), ok, last.vlen)
			}
		})
	}
}

// An optimistic reader may read a header from a stale view (a table word
// naming an offset inside another record), so probe must refuse any
// lengths that run past the arena, however large, and never hand them to
// a copy. The record of key "k" is doctored into such a header: flagWide
// set, its "wide word" (the key's bytes) a key length of 1 and a value
// length near 2^32, and its "key" (the value's first byte) 'k'.
func TestProbeRefusesLengthsPastTheArena(t *testing.T) {
	for _, vl := range []uint64{1 << 31, 1<<32 - 8, 1<<32 - 7, 1<<32 - 1} {
		t.Run(fmt.Sprint(vl), func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 1})
			if _, err := e.Set("k", []byte("k-and-more-bytes")); err != nil {
				t.Fatal(err)
			}
			s, h := e.shardFor("k")
			s.mu.Lock()
			slot, ok := s.findLocked("k", h)
			if !ok {
				t.Fatal("k not found")
			}
			en := s.at(slot)
			m, w := hdr64(s.arena, en.off+hdrMeta), hdr64(s.arena, en.off+hdrWide)
			m0, w0 := atomic.LoadUint64(m), atomic.LoadUint64(w)
			atomic.StoreUint64(m, m0|flagWide<<56)
			atomic.StoreUint64(w, vl|1<<32)
			s.mu.Unlock()
			_, _, _, gotVL, _, r := s.probe("k", h)
			s.mu.Lock()
			atomic.StoreUint64(m, m0)
			atomic.StoreUint64(w, w0)
			s.mu.Unlock()
			if r == peekHit {
				t.Fatalf("probe took a header whose %d-byte value runs past the %d-byte arena: hit, value length %d", vl, len(s.arena), gotVL)
			}
		})
	}
}
