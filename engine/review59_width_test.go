package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/evict"
)

// Review 59: the 16-byte header (compact lengths in the meta word,
// flagWide for longer ones) under readers and writers at once.

// r59Keys are keys at the compact header's key limit and around it, the
// empty key included.
var r59Keys = []string{"", "k", "eight-bb", string(bytes.Repeat([]byte{'a'}, 255)),
	string(bytes.Repeat([]byte{'b'}, 256)), string(bytes.Repeat([]byte{'c'}, 300)), "sixteen-bytes-16"}

// r59Sizes are value lengths on both sides of the compact header's value
// limit (65,535) and of its padding (65,529..65,536 pad alike).
var r59Sizes = []int{0, 1, 8, 9, 100, 65528, 65529, 65535, 65536, 65537, 65544, 70000}

// r59Value is the value gen of key i with n bytes: from 24 bytes on, the
// key's index, gen and n, then a byte of (i, gen) repeated; shorter, a
// byte of (i, n) repeated. r59Check tells such a value whole and of key i.
func r59Value(i int, gen uint64, n int) []byte {
	v := make([]byte, n)
	if n < 24 {
		for j := range v {
			v[j] = byte(i<<5 ^ n)
		}
		return v
	}
	binary.LittleEndian.PutUint64(v, uint64(i))
	binary.LittleEndian.PutUint64(v[8:], gen)
	binary.LittleEndian.PutUint64(v[16:], uint64(n))
	b := byte(gen*131) ^ byte(i)
	for j := 24; j < n; j++ {
		v[j] = b
	}
	return v
}

// r59Check returns why v is not a whole value r59Value(i, gen, len(v)) of
// some gen, or "".
func r59Check(i int, v []byte) string {
	n := len(v)
	if n < 24 {
		for j := range v {
			if v[j] != byte(i<<5^n) {
				return fmt.Sprintf("%d-byte value: byte %d is %#x, want %#x", n, j, v[j], byte(i<<5^n))
			}
		}
		return ""
	}
	if got := binary.LittleEndian.Uint64(v); got != uint64(i) {
		return fmt.Sprintf("%d-byte value of key %d, want key %d", n, got, i)
	}
	if got := binary.LittleEndian.Uint64(v[16:]); got != uint64(n) {
		return fmt.Sprintf("%d-byte value says it has %d bytes", n, got)
	}
	gen := binary.LittleEndian.Uint64(v[8:])
	b := byte(gen*131) ^ byte(i)
	for j := 24; j < n; j++ {
		if v[j] != b {
			return fmt.Sprintf("%d-byte value of generation %d: byte %d is %#x, want %#x (torn)", n, gen, j, v[j], b)
		}
	}
	return ""
}

// Readers of every kind (Get, AppendGet, GetItem, View, TTL, Items) race
// writers that overwrite keys of 0, 1, 255, 256 and 300 bytes with values
// crossing the compact limit both ways (in place and not), give and take
// TTLs (some expire), pin and unpin, delete and re-create, commit, with
// arenas rebuilt by the garbage and, under a small cap, evictions: every value a reader sees is whole and its key's, and a View's
// bytes never change while its fn runs, fn's own overwrites of the key
// included. Quick by default; TIDE_SOAK=1 runs it ten times longer.
func TestReview59ReadersSeeWholeValuesAcrossWidths(t *testing.T) {
	tests := []struct {
		name     string
		pol      evict.Spec
		maxBytes int64
	}{
		{"no policy", evict.Spec{}, 64 << 20},
		{"LRU", evict.AllKeysLRU, 64 << 20},
		{"LRU evicting", evict.AllKeysLRU, 300 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r59Soak(t, tt.pol, tt.maxBytes)
		})
	}
}

func r59Soak(t *testing.T, pol evict.Spec, maxBytes int64) {
	e, clk := newTest(t, Config{Shards: 1, MaxBytes: maxBytes, Policy: pol})
	writes := 1500
	if raceEnabled {
		writes = 400
	}
	if os.Getenv("TIDE_SOAK") != "" {
		writes *= 10
	}
	var gens [16]uint64 // per key, written by the writers' goroutine only
	var wg sync.WaitGroup
	done := make(chan struct{})
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		rng := rand.New(rand.NewPCG(1, 2))
		for w := range writes {
			i := rng.IntN(len(r59Keys))
			k := r59Keys[i]
			gens[i]++
			v := r59Value(i, gens[i], r59Sizes[rng.IntN(len(r59Sizes))])
			var err error
			switch op := rng.IntN(12); op {
			case 0, 1, 2, 3:
				_, err = e.Set(k, v)
			case 4, 5:
				_, err = e.SetTTL(k, v, time.Duration(1+rng.IntN(20))*time.Second) // some expire
			case 6:
				_, _, err = e.SetWith(k, v, SetOptions{KeepTTL: true, Pin: rng.IntN(2) == 0})
			case 7:
				_, err = e.Expire(k, time.Duration(1+rng.IntN(3))*time.Hour, ExpireConditionAlways)
			case 8:
				_, err = e.Persist(k)
			case 9:
				_, err = e.Pin(k, rng.IntN(2) == 0)
			case 10:
				if rng.IntN(2) == 0 {
					e.Delete(k)
				} else if got, ok := e.GetAndDelete(k); ok {
					if why := r59Check(i, got); why != "" {
						fail("GetAndDelete(key %d): %s", i, why)
					}
				}
			case 11:
				_, _, err = e.Commit(nil, []Op{{Key: k, Value: v, KeepTTL: true}})
			}
			if err != nil && !errors.Is(err, ErrOutOfMemory) { // pinned entries may fill the cap
				fail("write %d: %v", w, err)
				return
			}
			if w%16 == 0 {
				clk.Advance(time.Second) // expires some TTLs
				if err := e.Check(); err != nil {
					fail("Check after write %d: %v", w, err)
					return
				}
			}
		}
	}()
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			var buf []byte
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				i := rng.IntN(len(r59Keys))
				k := r59Keys[i]
				switch rng.IntN(6) {
				case 0:
					if v, ok := e.Get(k); ok {
						if why := r59Check(i, v); why != "" {
							fail("Get(key %d): %s", i, why)
						}
					}
				case 1:
					var ok bool
					if buf, ok = e.AppendGet(buf[:0], k); ok {
						if why := r59Check(i, buf); why != "" {
							fail("AppendGet(key %d): %s", i, why)
						}
					}
				case 2:
					if it, ok := e.GetItem(k); ok {
						if why := r59Check(i, it.Value); why != "" {
							fail("GetItem(key %d): %s", i, why)
						}
						if it.TTL != NoTTL && (it.TTL <= 0 || it.TTL > 3*time.Hour) {
							fail("GetItem(key %d): TTL %v", i, it.TTL)
						}
					}
				case 3, 4:
					e.View(k, func(v []byte) {
						first := bytes.Clone(v)
						if why := r59Check(i, first); why != "" {
							fail("View(key %d): %s", i, why)
						}
						if rng.IntN(4) == 0 {
							// fn overwrites its own key with a value that
							// would fit in place.
							if _, _, err := e.SetWith(k, r59Value(i, 1<<40+uint64(n), len(v)), SetOptions{KeepTTL: true}); err != nil && !errors.Is(err, ErrOutOfMemory) {
								fail("Set in View: %v", err)
							}
						}
						runtime.Gosched()
						if !bytes.Equal(v, first) {
							fail("View(key %d): the %d bytes changed while fn ran", i, len(v))
						}
					})
				case 5:
					if ttl, ok := e.TTL(k); ok && ttl != NoTTL && (ttl <= 0 || ttl > 3*time.Hour) {
						fail("TTL(key %d) = %v", i, ttl)
					}
					if n%16 == 0 {
						for k, it := range e.Items() {
							i := r59Index(k)
							if i < 0 {
								fail("Items yielded a %d-byte key never written", len(k))
								continue
							}
							if why := r59Check(i, it.Value); why != "" {
								fail("Items(key %d): %s", i, why)
							}
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	mustCheck(t, e)
	st := e.Stats()
	t.Logf("%d evicted, %d expired", st.Evicted, st.Expired)
}

func r59Index(k string) int {
	for i, x := range r59Keys {
		if x == k {
			return i
		}
	}
	return -1
}

// Entries at the compact header's limits and past them (keys of 0, 255
// and 256 bytes, values of 0, 65,535 and 65,536, with and without TTL,
// pinned or not, overwritten across the width both ways) come back
// exactly from the log (replayed, and after a Rewrite) and from a
// snapshot restored into a new engine; Check holds on each.
func TestReview59WidthsSurviveLogAndSnapshot(t *testing.T) {
	k255, k256 := string(bytes.Repeat([]byte{'x'}, 255)), string(bytes.Repeat([]byte{'y'}, 256))
	tests := []struct {
		name  string
		write func(e *Engine) error
	}{
		{"empty key and value", func(e *Engine) error { _, err := e.Set("", nil); return err }},
		{"compact at both limits", func(e *Engine) error { _, err := e.Set(k255, r59Value(1, 1, 65535)); return err }},
		{"wide key", func(e *Engine) error { _, err := e.Set(k256, nil); return err }},
		{"wide value with a TTL", func(e *Engine) error { _, err := e.SetTTL("v", r59Value(2, 1, 65536), time.Hour); return err }},
		{"wide to compact", func(e *Engine) error {
			if _, err := e.Set("w", r59Value(3, 1, 65536)); err != nil {
				return err
			}
			_, err := e.Set("w", r59Value(3, 2, 65535))
			return err
		}},
		{"compact to wide, pinned", func(e *Engine) error {
			if _, _, err := e.SetWith("p", r59Value(4, 1, 65529), SetOptions{TTL: NoTTL, Pin: true}); err != nil {
				return err
			}
			_, _, err := e.SetWith("p", r59Value(4, 2, 65536), SetOptions{KeepTTL: true})
			return err
		}},
		{"TTL given, then cleared", func(e *Engine) error {
			if _, err := e.Set(k255, r59Value(5, 1, 65536)); err != nil {
				return err
			}
			if _, err := e.Expire(k255, time.Hour, ExpireConditionAlways); err != nil {
				return err
			}
			_, err := e.Persist(k255)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(t0)
			e := mustOpenDurable(t, nil, dir, clk, Config{Shards: 1, Policy: evict.AllKeysLRU})
			if err := tt.write(e); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, e)
			want := dump(e)
			var snap bytes.Buffer
			if _, err := e.Snapshot(&snap); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			for _, rewrite := range []bool{false, true} {
				e := mustOpenDurable(t, nil, dir, clk, Config{Shards: 1, Policy: evict.AllKeysLRU})
				mustCheck(t, e)
				if d := diffDumps(want, dump(e)); d != "" {
					t.Errorf("replayed (after a rewrite: %v): got … want:\n%s", rewrite, d)
				}
				if rewrite {
					e.Close()
					break
				}
				if err := e.Rewrite(); err != nil {
					t.Fatal(err)
				}
				e.Close()
			}
			r, _ := newTest(t, Config{Shards: 1, Clock: clk})
			if _, err := r.Restore(&snap); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, r)
			if d := diffDumps(want, dump(r)); d != "" {
				t.Errorf("restored: got … want:\n%s", d)
			}
		})
	}
}

// Check reports (and does not panic on) every inconsistency of a header
// made by hand: each case writes one record, doctors its header words,
// runs Check, and restores them.
func TestReview59CheckCatchesDoctoredHeaders(t *testing.T) {
	type words struct{ meta, wide uint64 }
	tests := []struct {
		name       string
		key        string
		value      int
		doctor     func(w words) words
		wantSubstr string
	}{
		{"compact marked wide at the arena's end", "", 0,
			func(w words) words { w.meta |= flagWide << 56; return w }, "outside the arena"},
		{"compact marked wide", "k", 8,
			func(w words) words { w.meta |= flagWide << 56; return w }, ""},
		{"wide unmarked", "k", 70000,
			func(w words) words { w.meta &^= flagWide << 56; return w }, ""},
		{"wide with lengths in its meta word", "k", 70000,
			func(w words) words { w.meta |= 1 << 32; return w }, "meta word"},
		{"wide with a value length in its meta word", "k", 70000,
			func(w words) words { w.meta |= 5 << 40; return w }, "meta word"},
		{"wide with bits above its key length", "k", 70000,
			func(w words) words { w.wide |= 1 << 60; return w }, "wide word"},
		{"compact marked with a deadline at the arena's end", "", 0,
			func(w words) words { w.meta |= flagDeadline << 56; return w }, ""},
		{"an unknown flag", "k", 8,
			func(w words) words { w.meta |= 1 << 63; return w }, "unknown flags"},
		{"a value length changed", "k", 8,
			func(w words) words { w.meta += 1 << 40; return w }, ""},
		{"a key length changed", "kk", 8,
			func(w words) words { w.meta -= 1 << 32; return w }, ""},
		{"another slot", "k", 8,
			func(w words) words { w.meta++; return w }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 1})
			if _, err := e.Set(tt.key, make([]byte, tt.value)); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, e)
			s, h := e.shardFor(tt.key)
			s.mu.Lock()
			slot, ok := s.findLocked(tt.key, h)
			if !ok {
				s.mu.Unlock()
				t.Fatal("key not found")
			}
			en := s.at(slot)
			pm := hdr64(s.arena, en.off+hdrMeta)
			var pw *uint64
			if int(en.off)+hdrWide+8 <= len(s.arena) {
				pw = hdr64(s.arena, en.off+hdrWide)
			}
			w0 := words{meta: *pm}
			if pw != nil {
				w0.wide = *pw
			}
			w := tt.doctor(w0)
			*pm = w.meta
			if pw != nil {
				*pw = w.wide
			}
			s.mu.Unlock()
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						// Check panicked holding every shard's lock
						// shared.
						for i := range e.shards {
							e.shards[i].mu.RUnlock()
						}
						err = fmt.Errorf("panic: %v", p)
					}
				}()
				return e.Check()
			}()
			s.mu.Lock()
			*pm = w0.meta
			if pw != nil {
				*pw = w0.wide
			}
			s.mu.Unlock()
			switch {
			case err == nil:
				t.Fatalf("Check = nil, want an error")
			case bytes.HasPrefix([]byte(err.Error()), []byte("panic")):
				t.Fatalf("Check: got %v, want an error", err)
			case !bytes.Contains([]byte(err.Error()), []byte(tt.wantSubstr)):
				t.Fatalf("Check: got %v, want an error about %q", err, tt.wantSubstr)
			}
		})
	}
}
