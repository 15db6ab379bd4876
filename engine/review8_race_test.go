package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

// r8lens are the value lengths the racing writers use: lengths within one
// padded size (57..64), the same length again and again (an in-place
// overwrite that does not store the length), shrinking and growing.
var r8lens = []int{8, 9, 15, 16, 57, 60, 63, 64, 64, 64, 64, 65, 120, 300}

// r8val is the value written for sequence number n: its length is a
// function of n, its first word is n, and every other byte a function of
// n and its position, so a reader can tell a whole value from a mix.
func r8val(n uint64) []byte {
	v := make([]byte, r8lens[n%uint64(len(r8lens))])
	binary.LittleEndian.PutUint64(v, n)
	for i := 8; i < len(v); i++ {
		v[i] = byte(n*31 + uint64(i)*7)
	}
	return v
}

// r8whole reports whether v is r8val of the n its first word names, and
// that n.
func r8whole(v []byte) (uint64, bool) {
	if len(v) < 8 {
		return 0, false
	}
	n := binary.LittleEndian.Uint64(v)
	return n, bytes.Equal(v, r8val(n))
}

// r8ttl is the TTL written with sequence number n (the clock stands
// still, so a reader must report exactly it): NoTTL for one n in five, so
// that records without a deadline word get one.
func r8ttl(n uint64) time.Duration {
	if n%5 == 0 {
		return NoTTL
	}
	return time.Duration(1+n%1000) * time.Hour
}

type r8seen struct {
	key string
	n   uint64
	ver uint64
}

// TestReview8LockFreeReadsSeeWholeValuesWithTheirVersionAndTTL races
// lock-free readers (AppendGet, GetItem, View, TTL) with writers that
// overwrite a few keys of one shard in place (same length, shorter and
// longer within the padded size), append (longer values, a TTL given to a
// record without a deadline word), delete, and grow and compact the arena
// and the table with keys of their own, under a byte cap with an evicting
// policy and without one. Every read must return a whole value, with the
// version the write of that value returned and its TTL (the clock stands
// still); one goroutine's successive reads of a key never go back in
// version; a key deleted by the only goroutine that writes it is missing
// for every read that goroutine makes after the delete returned.
func TestReview8LockFreeReadsSeeWholeValuesWithTheirVersionAndTTL(t *testing.T) {
	for _, c := range []struct {
		name     string
		maxBytes int64
		policy   evict.Spec
	}{
		{"unbounded", 0, evict.NoEviction},
		{"tinylfu", 64 << 10, evict.TinyLFU},
		{"adaptive", 64 << 10, evict.Adaptive},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 1, MaxBytes: c.maxBytes, Policy: c.policy})
			const shared = 6
			key := func(i int) string { return fmt.Sprintf("s%d", i) }
			iters := 4000
			if raceEnabled {
				iters = 1000
			}
			var vers sync.Map // n → version its write returned
			var wg sync.WaitGroup
			errc := make(chan error, 64)
			fail := func(format string, a ...any) {
				select {
				case errc <- fmt.Errorf(format, a...):
				default:
				}
			}
			const writers = 2
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range iters {
						n := uint64(w+1)<<32 | uint64(i)
						k := key(int(n*7) % shared)
						ver, _, err := e.SetWith(k, r8val(n), SetOptions{TTL: r8ttl(n)})
						if err != nil {
							fail("SetTTL(%s): %v", k, err)
							return
						}
						vers.Store(n, ver)
						// A key of its own, deleted: gone for this
						// goroutine from the moment Delete returns.
						own := fmt.Sprintf("own%d", w)
						if i%4 == 0 {
							if _, _, err := e.SetWith(own, r8val(n), SetOptions{TTL: r8ttl(n)}); err != nil {
								fail("SetTTL(%s): %v", own, err)
								return
							}
							e.Delete(own)
							if _, ok := e.Get(own); ok {
								fail("Get(%s) found it after Delete returned", own)
							}
							if _, ok := e.GetItem(own); ok {
								fail("GetItem(%s) found it after Delete returned", own)
							}
							if e.View(own, func([]byte) {}) {
								fail("View(%s) found it after Delete returned", own)
							}
							if _, ok := e.TTL(own); ok {
								fail("TTL(%s) found it after Delete returned", own)
							}
						}
						// Grow the table and the arena with keys that
						// come and go, so that both are copied while
						// readers read.
						if i%50 == 0 {
							for j := range 40 {
								e.Set(fmt.Sprintf("g%d-%d", w, j), r8val(uint64(j)))
							}
							for j := range 40 {
								e.Delete(fmt.Sprintf("g%d-%d", w, j))
							}
						}
					}
				}()
			}
			readers := 3
			seen := make([][]r8seen, readers)
			for r := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					last := make([]uint64, shared)
					var buf []byte
					note := func(i int, n, ver uint64) {
						if ver < last[i] {
							fail("reader %d: %s went back from v%d to v%d", r, key(i), last[i], ver)
						}
						last[i] = ver
						seen[r] = append(seen[r], r8seen{key(i), n, ver})
					}
					for j := range iters * 2 {
						i := (j + r) % shared
						k := key(i)
						switch j % 4 {
						case 0:
							var ok bool
							buf, ok = e.AppendGet(buf[:0], k)
							if ok {
								if _, whole := r8whole(buf); !whole {
									fail("AppendGet(%s) = a torn value of %d bytes", k, len(buf))
								}
							}
						case 1:
							it, ok := e.GetItem(k)
							if !ok {
								continue
							}
							n, whole := r8whole(it.Value)
							if !whole {
								fail("GetItem(%s) = a torn value of %d bytes", k, len(it.Value))
								continue
							}
							if it.TTL != r8ttl(n) {
								fail("GetItem(%s) = value %x with TTL %v, written with %v", k, n, it.TTL, r8ttl(n))
							}
							note(i, n, it.Version)
						case 2:
							e.View(k, func(v []byte) {
								first := bytes.Clone(v)
								if _, whole := r8whole(first); !whole {
									fail("View(%s) = a torn value of %d bytes", k, len(first))
									return
								}
								runtime.Gosched()
								if !bytes.Equal(v, first) {
									fail("View(%s): the value changed under fn", k)
								}
							})
						case 3:
							if ttl, ok := e.TTL(k); ok && ttl != NoTTL && (ttl%time.Hour != 0 || ttl < time.Hour || ttl > 1000*time.Hour) {
								fail("TTL(%s) = %v, which no write gave", k, ttl)
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Error(err)
			}
			for r := range seen {
				for _, s := range seen[r] {
					if v, ok := vers.Load(s.n); !ok || v.(uint64) != s.ver {
						t.Errorf("reader %d: %s held value %x at v%d; its write returned v%v", r, s.key, s.n, s.ver, v)
						break
					}
				}
			}
			mustCheck(t, e)
		})
	}
}

// TestReview8ExpiredKeyStaysMissingForEveryRead races readers of keys of
// one shard with goroutines that give their own key a TTL, advance the
// shared manual clock past it and then read it: once the clock has passed
// a key's deadline (Advance returned), no read of the goroutine that moved
// it finds the key, whichever read it is, while other writers overwrite,
// expire and compact the same shard.
func TestReview8ExpiredKeyStaysMissingForEveryRead(t *testing.T) {
	e, clk := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: evict.AllKeysLRU})
	iters := 3000
	if raceEnabled {
		iters = 800
	}
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	fail := func(format string, a ...any) {
		select {
		case errc <- fmt.Errorf(format, a...):
		default:
		}
	}
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := fmt.Sprintf("x%d", g)
			for i := range iters {
				n := uint64(g)<<32 | uint64(i)
				ttl := time.Duration(1+i%3) * time.Millisecond
				if _, err := e.SetTTL(own, r8val(n), ttl); err != nil {
					fail("SetTTL: %v", err)
					return
				}
				// Reads that must find it (the clock moves forward only
				// as the goroutines advance it, by at most 3 ms each,
				// so another goroutine may already have passed it:
				// nothing asserted here).
				e.Get(own)
				clk.Advance(ttl)
				switch i % 5 {
				case 0:
					if _, ok := e.Get(own); ok {
						fail("Get(%s) found it after its deadline", own)
					}
				case 1:
					if _, ok := e.GetItem(own); ok {
						fail("GetItem(%s) found it after its deadline", own)
					}
				case 2:
					if e.View(own, func([]byte) {}) {
						fail("View(%s) found it after its deadline", own)
					}
				case 3:
					if _, ok := e.TTL(own); ok {
						fail("TTL(%s) found it after its deadline", own)
					}
				case 4:
					if _, ok, err := e.GetAndExpire(own, time.Hour); ok || err != nil {
						fail("GetAndExpire(%s) found it after its deadline (%v)", own, err)
					}
				}
				if i%7 == 0 {
					e.RunExpiryCycle()
				}
				// Another key overwritten in place and appended.
				e.Set(fmt.Sprintf("y%d", i%5), r8val(n))
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	mustCheck(t, e)
}
