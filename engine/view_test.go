package engine

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/evict"
)

// View reports hits and misses as Get does, and calls fn only on a hit.
func TestViewReportsWhatGetReports(t *testing.T) {
	e, _ := newTest(t, Config{})
	mustSet(t, e, "k", "v1")
	var got []byte
	calls := 0
	if !e.View("k", func(v []byte) { calls++; got = append(got, v...) }) || string(got) != "v1" || calls != 1 {
		t.Fatalf("View(k) = %q after %d calls, want v1 once", got, calls)
	}
	if e.View("absent", func([]byte) { calls++ }) || calls != 1 {
		t.Fatalf("View(absent) found it or called fn (%d calls)", calls)
	}
	if st := e.Stats(); st.Hits != 1 || st.Misses != 1 {
		t.Fatalf("Stats hits %d misses %d, want 1 and 1", st.Hits, st.Misses)
	}
}

// The zero-copy read allocates nothing.
func TestViewAllocatesNothing(t *testing.T) {
	e, _ := newTest(t, Config{MaxBytes: 1 << 20, Policy: evict.TinyLFU})
	mustSet(t, e, "k", "some value")
	n := 0
	fn := func(v []byte) { n += len(v) }
	if a := testing.AllocsPerRun(100, func() { e.View("k", fn) }); a != 0 {
		t.Fatalf("View allocates %v per call, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { e.View("absent", fn) }); a != 0 {
		t.Fatalf("View of a missing key allocates %v per call, want 0", a)
	}
}

// fn runs with no engine lock held: it may read, overwrite and delete the
// very key it is viewing, and the bytes it was given do not change under
// it (a write stores a new record).
func TestViewCallbackMayCallBackIntoTheEngine(t *testing.T) {
	for _, newLen := range []int{1, 5, 500} { // shorter, equal, longer than the value viewed
		t.Run(fmt.Sprint(newLen), func(t *testing.T) {
			e, _ := newTest(t, Config{MaxBytes: 1 << 20, Policy: evict.TinyLFU})
			mustSet(t, e, "k", "hello")
			mustSet(t, e, "other", "x")
			done := make(chan bool, 1)
			go func() {
				done <- e.View("k", func(v []byte) {
					if got, ok := e.Get("k"); !ok || string(got) != "hello" {
						t.Errorf("Get inside View = %q, %v", got, ok)
					}
					if _, err := e.Set("k", bytes.Repeat([]byte{'z'}, newLen)); err != nil {
						t.Errorf("Set inside View: %v", err)
					}
					if _, err := e.Set("other", []byte("y")); err != nil {
						t.Errorf("Set of another key inside View: %v", err)
					}
					if string(v) != "hello" {
						t.Errorf("value changed under View after an overwrite: %q", v)
					}
					if !e.Delete("k") {
						t.Error("Delete inside View found nothing")
					}
					if string(v) != "hello" {
						t.Errorf("value changed under View after a delete: %q", v)
					}
				})
			}()
			select {
			case ok := <-done:
				if !ok {
					t.Fatal("View missed")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("View whose callback calls the engine deadlocked")
			}
			mustCheck(t, e)
		})
	}
}

// Under concurrent overwrites (which rebuild the arena), deletes and
// evictions, every View sees one whole value as it was written: all its
// bytes equal and its length the one written with that byte. Run under
// -race, this also checks that fn's reads race with no write.
func TestViewSeesWholeValuesUnderConcurrentWriters(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 64 << 10, Policy: evict.TinyLFU})
	const keys = 32
	key := func(i int) string { return fmt.Sprintf("key-%d", i) }
	valueOf := func(b byte) []byte { return bytes.Repeat([]byte{b}, 1+int(b)%200) }
	for i := range keys {
		if _, err := e.Set(key(i), valueOf(0)); err != nil {
			t.Fatal(err)
		}
	}
	iters := 4000
	if raceEnabled {
		iters = 1500
	}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				k := key((i*7 + w) % keys)
				if i%13 == 0 {
					e.Delete(k)
					continue
				}
				if _, err := e.Set(k, valueOf(byte(i*31+w))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				e.View(key((i+r)%keys), func(v []byte) {
					if len(v) == 0 {
						t.Error("View gave an empty value; none was written")
						return
					}
					if want := valueOf(v[0]); !bytes.Equal(v, want) {
						t.Errorf("View saw a torn value: %d bytes starting %d, want %d", len(v), v[0], len(want))
					}
				})
			}
		}()
	}
	wg.Wait()
	mustCheck(t, e)
}

// A due key is never shown: View misses, does not call fn, and removes
// the key (lazy expiry, as every read does).
func TestViewOfADueKeyMisses(t *testing.T) {
	e, clk := newTest(t, Config{})
	if _, _, err := e.SetWith("k", []byte("v"), SetOptions{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	if !e.View("k", func([]byte) {}) {
		t.Fatal("View missed a live key with a TTL")
	}
	clk.Advance(time.Second)
	if e.View("k", func([]byte) { t.Error("fn called for a due key") }) {
		t.Fatal("View found a due key")
	}
	if st := e.Stats(); st.Entries != 0 || st.Expired != 1 {
		t.Fatalf("after View of a due key: %d entries, %d expired; want 0 and 1", st.Entries, st.Expired)
	}
}

// A closed engine reports a miss and never calls fn.
func TestViewOnAClosedEngineMisses(t *testing.T) {
	e, _ := newTest(t, Config{})
	mustSet(t, e, "k", "v")
	e.Close()
	if e.View("k", func([]byte) { t.Error("fn called on a closed engine") }) {
		t.Fatal("View found a key in a closed engine")
	}
}

func mustSet(t testing.TB, e *Engine, key, value string) {
	t.Helper()
	if _, err := e.Set(key, []byte(value)); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}

// A read that starts after a write has returned sees that write (or a
// later one), whichever path it takes: the optimistic read must never
// answer from a stale view of the shard while writers grow the table and
// ents, rebuild the arena (values of changing lengths) and reuse slots
// (other keys deleted and created).
func TestReadsAfterAWriteSeeIt(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1, MaxBytes: 1 << 20, Policy: evict.TinyLFU})
	iters := 3000
	if raceEnabled {
		iters = 1000
	}
	var done atomic.Int64 // the highest value whose Set has returned
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // churn: other keys come and go, moving slots and table words
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("churn-%d", i%97)
			if i%3 == 0 {
				e.Delete(k)
			} else if _, err := e.Set(k, bytes.Repeat([]byte{'c'}, i%300)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	readers := make(chan error, 2)
	for range 2 {
		go func() {
			var buf []byte
			for {
				want := done.Load()
				if want >= int64(iters) {
					readers <- nil
					return
				}
				check := func(v []byte) error {
					got, err := strconv.ParseInt(string(bytes.TrimRight(v, "-")), 10, 64)
					if err != nil || got < want {
						return fmt.Errorf("read %q after the write of %d had returned", v, want)
					}
					return nil
				}
				var ok bool
				if buf, ok = e.AppendGet(buf[:0], "k"); ok {
					if err := check(buf); err != nil {
						readers <- err
						return
					}
				}
				var err error
				e.View("k", func(v []byte) { err = check(v) })
				if err != nil {
					readers <- err
					return
				}
			}
		}()
	}
	for i := 1; i <= iters; i++ {
		// Lengths vary so that overwrites append and rebuild the arena.
		if _, err := e.Set("k", append([]byte(strconv.Itoa(i)), bytes.Repeat([]byte{'-'}, i%50)...)); err != nil {
			t.Fatal(err)
		}
		done.Store(int64(i))
	}
	for range 2 {
		if err := <-readers; err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	mustCheck(t, e)
}

// The plain read allocates nothing into a buffer with room, on the
// optimistic path and on the locked one (a key with a TTL).
func TestAppendGetAllocatesNothing(t *testing.T) {
	e, _ := newTest(t, Config{MaxBytes: 1 << 20, Policy: evict.TinyLFU})
	mustSet(t, e, "k", "some value")
	if _, err := e.SetTTL("t", []byte("some value"), time.Hour); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 64)
	for _, k := range []string{"k", "t", "absent"} {
		if a := testing.AllocsPerRun(100, func() { buf, _ = e.AppendGet(buf[:0], k) }); a != 0 {
			t.Errorf("AppendGet(%q) allocates %v per call, want 0", k, a)
		}
	}
}

// Get allocates the copy it returns and nothing else, whatever the value's
// length, on the optimistic path and on the locked one (a key with a TTL).
func TestGetAllocatesOnlyTheCopy(t *testing.T) {
	e, _ := newTest(t, Config{MaxBytes: 1 << 20, Policy: evict.TinyLFU})
	for _, n := range []int{1, 8, 63, 64, 65, 1000} {
		v := bytes.Repeat([]byte{'v'}, n)
		if _, err := e.Set("k", v); err != nil {
			t.Fatal(err)
		}
		if _, err := e.SetTTL("t", v, time.Hour); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"k", "t"} {
			if got, _ := e.Get(k); !bytes.Equal(got, v) {
				t.Fatalf("Get(%q) = %d bytes, want %d", k, len(got), n)
			}
			if a := testing.AllocsPerRun(50, func() { e.Get(k) }); a != 1 {
				t.Errorf("Get(%q) of a %d-byte value allocates %v times, want 1", k, n, a)
			}
		}
	}
}

// An arena with little garbage grows by moving its bytes as they are (see
// shard.moveLocked): a value a View holds stays as it was through the move
// and a later overwrite of its key (the old array is never written again),
// and Views that mark records while a writer moves the arena race with
// nothing (the move reads header words atomically; run under -race).
func TestViewSurvivesArenaGrowth(t *testing.T) {
	t.Run("callback", func(t *testing.T) {
		e, _ := newTest(t, Config{Shards: 1})
		mustSet(t, e, "k", "hello")
		ok := e.View("k", func(v []byte) {
			for i := range 5000 { // new keys only: the arena grows, garbage-free
				if _, err := e.Set(fmt.Sprintf("grow-%d", i), []byte("0123456789abcdef")); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Set("k", []byte("HELLO")); err != nil { // same padded length
				t.Fatal(err)
			}
			if string(v) != "hello" {
				t.Errorf("value under View after the arena grew and the key was overwritten: got %q, want %q", v, "hello")
			}
		})
		if !ok {
			t.Fatal("View missed")
		}
		if got, _ := e.Get("k"); string(got) != "HELLO" {
			t.Errorf("Get = %q, want %q", got, "HELLO")
		}
		mustCheck(t, e)
	})
	t.Run("concurrent", func(t *testing.T) {
		e, _ := newTest(t, Config{Shards: 1})
		for i := range 8 {
			mustSet(t, e, fmt.Sprintf("k%d", i), fmt.Sprintf("value-%d", i))
		}
		n := 20000
		if raceEnabled {
			n = 4000
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("k%d", i%8)
				e.View(k, func(v []byte) {
					if want := "value-" + k[1:]; string(v) != want {
						t.Errorf("View(%s) = %q, want %q", k, v, want)
					}
				})
			}
		}()
		for i := range n {
			if _, err := e.Set(fmt.Sprintf("grow-%d", i), []byte("0123456789abcdef")); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
		mustCheck(t, e)
	})
}

// A record a View marked is overwritten in place again once no View of
// the shard is in progress (no new record, no garbage), and is not while
// one is: the writer then appends, leaving the viewed bytes as they were.
func TestViewedRecordIsOverwrittenInPlaceOnceNoViewRuns(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	mustSet(t, e, "k", "aaaa")
	s := &e.shards[0]
	arenaLen := func() int {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return len(s.arena)
	}
	e.View("k", func([]byte) {})
	before := arenaLen()
	mustSet(t, e, "k", "bbbb")
	if got := arenaLen(); got != before {
		t.Errorf("overwrite after the View ended: arena %d → %d bytes, want in place", before, got)
	}
	e.View("k", func(v []byte) {
		mustSet(t, e, "k", "cccc")
		if string(v) != "bbbb" {
			t.Errorf("value under View after an overwrite: got %q, want %q", v, "bbbb")
		}
		if got := arenaLen(); got == before {
			t.Error("overwrite during a View of the shard was made in place, want a new record")
		}
	})
	if got, _ := e.Get("k"); string(got) != "cccc" {
		t.Errorf("Get = %q, want %q", got, "cccc")
	}
	mustCheck(t, e)
}

// Views racing overwrites of the same size (which may be made in place
// when no View runs) never see a value change under them: fn keeps
// reading its value, yielding in between, and finds it whole and the same
// each time. Under -race this also checks that fn's plain reads race with
// no in-place store.
func TestViewValueStaysWhileInPlaceOverwritesRace(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	const keys = 4
	key := func(i int) string { return fmt.Sprintf("k%d", i) }
	for i := range keys {
		mustSet(t, e, key(i), string(bytes.Repeat([]byte{0}, 64)))
	}
	iters := 3000
	if raceEnabled {
		iters = 600
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range iters * 4 {
			if _, err := e.Set(key(i%keys), bytes.Repeat([]byte{byte(i)}, 64)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				e.View(key((i+r)%keys), func(v []byte) {
					first := bytes.Clone(v)
					if !bytes.Equal(first, bytes.Repeat(first[:1], 64)) {
						t.Errorf("View saw a torn value: %v", first)
					}
					for range 3 {
						runtime.Gosched()
						if !bytes.Equal(v, first) {
							t.Errorf("value changed under View: was %d, now %v", first[0], v)
							return
						}
					}
				})
			}
		}()
	}
	wg.Wait()
	mustCheck(t, e)
}

// A View whose fn panics stops counting itself all the same: afterwards a
// record it marked is overwritten in place again (a count left behind
// would make every later overwrite of a viewed record in the shard append).
func TestViewThatPanicsLeavesNoViewCounted(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	mustSet(t, e, "k", "aaaa")
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("fn's panic did not reach View's caller")
			}
		}()
		e.View("k", func([]byte) { panic("fn fails") })
	}()
	if !e.shards[0].views.Load().none() {
		t.Fatal("a View is still counted after its fn panicked")
	}
	s := &e.shards[0]
	s.mu.RLock()
	before := len(s.arena)
	s.mu.RUnlock()
	mustSet(t, e, "k", "bbbb")
	s.mu.RLock()
	after := len(s.arena)
	s.mu.RUnlock()
	if after != before {
		t.Errorf("overwrite after a panicking View: arena %d → %d bytes, want in place", before, after)
	}
	mustCheck(t, e)
}

// View counts are kept per shard: a View in progress on one shard keeps
// in-place overwrites of viewed records off that shard only. Every shard
// of a 4-shard engine, in turn, is the one viewed: its viewed record must
// be appended anew, every other shard's viewed record overwritten in place.
func TestViewInProgressHoldsOffInPlaceOverwritesOfItsShardOnly(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 4})
	keys := make([]string, len(e.shards)) // keys[i] lives in shard i
	for i := 0; slices.Contains(keys, ""); i++ {
		k := fmt.Sprintf("k%d", i)
		s, _ := e.shardFor(k)
		for j := range e.shards {
			if &e.shards[j] == s && keys[j] == "" {
				keys[j] = k
			}
		}
	}
	arenaLen := func(i int) int {
		s := &e.shards[i]
		s.mu.RLock()
		defer s.mu.RUnlock()
		return len(s.arena)
	}
	for round, viewed := range keys {
		val := strings.Repeat(string(rune('a'+round)), 8)
		for _, k := range keys {
			mustSet(t, e, k, val)
			e.View(k, func([]byte) {}) // marks the record
		}
		var before [4]int
		for i := range keys {
			before[i] = arenaLen(i)
		}
		e.View(viewed, func([]byte) {
			for i, k := range keys {
				mustSet(t, e, k, strings.ToUpper(val))
				inPlace := arenaLen(i) == before[i]
				if want := i != round; inPlace != want {
					t.Errorf("overwrite of %s (shard %d) while a View of shard %d runs: in place %v, want %v", k, i, round, inPlace, want)
				}
			}
		})
	}
	mustCheck(t, e)
}
