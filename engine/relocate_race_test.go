package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Concurrent lock-free readers of keys that are always present, while one
// writer gives them TTLs and takes them away (Expire and GetAndExpire move
// a record stored without a deadline word to one with it; Persist leaves
// the word) between overwrites, with the arena kept full so that each move
// compacts the shard, open to the readers: every read finds the key, and
// its value and version come from one write (the value names the write,
// the writer records the version it got), never a value of one record with
// the version of another or a torn value.
func TestLockFreeReadsSeeWholeEntriesWhileTTLsMoveRecords(t *testing.T) {
	e, clk := newTest(t, Config{Shards: 1})
	s := &e.shards[0]
	const nk = 6
	keys := make([]string, nk)
	var versionOf sync.Map // write number → version
	writeNo := 0
	write := func(k string, n int) {
		writeNo++
		v := make([]byte, 8*n)
		for i := range n {
			binary.LittleEndian.PutUint64(v[8*i:], uint64(writeNo))
		}
		ver, err := e.Set(k, v)
		if err != nil {
			t.Fatal(err)
		}
		versionOf.Store(uint64(writeNo), ver)
	}
	for i := range keys {
		keys[i] = fmt.Sprintf("s%d", i)
		write(keys[i], 1)
	}
	type obs struct {
		no, version uint64
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	seen := make([][]obs, 2)
	errs := make(chan string, 16)
	report := func(f string, a ...any) {
		select {
		case errs <- fmt.Sprintf(f, a...):
		default:
		}
	}
	for g := range seen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := keys[(i+g)%nk]
				it, ok := e.GetItem(k)
				if !ok {
					report("GetItem(%s) missed a key that is always present", k)
					continue
				}
				v := it.Value
				if len(v) == 0 || len(v)%8 != 0 || bytes.Count(v, v[:8]) != len(v)/8 {
					report("GetItem(%s) = torn value %x", k, v)
					continue
				}
				if it.TTL != NoTTL && (it.TTL <= 0 || it.TTL > time.Hour) {
					report("GetItem(%s): TTL %v", k, it.TTL)
				}
				no := binary.LittleEndian.Uint64(v)
				if ver, ok := versionOf.Load(no); !ok {
					// The write may not have returned yet: checked at the end.
					seen[g] = append(seen[g], obs{no, it.Version})
				} else if ver.(uint64) != it.Version {
					report("GetItem(%s) found write %d's value with version %d; that write made version %d", k, no, it.Version, ver)
				}
				reads.Add(1)
			}
		}()
	}
	for reads.Load() == 0 { // the readers are at work before the writes start
		runtime.Gosched()
	}
	rng := rand.New(rand.NewPCG(5, 6))
	filler := ""
	moves, opened := 0, 0
	setCompactingHook(t, func(*shard) { opened++ })
	for i := range 300 {
		e.Delete(filler)
		filler = fmt.Sprintf("f%05d", i)
		if room := cap(s.arena) - len(s.arena); room >= recSize(len(filler), 0, 0) {
			e.Set(filler, make([]byte, room-recSize(len(filler), 0, 0)))
		}
		k := keys[rng.IntN(nk)]
		f, _ := recordOf(t, e, k)
		switch rng.IntN(4) {
		case 0:
			write(k, 1+rng.IntN(12))
		case 1:
			if _, err := e.Expire(k, time.Hour, ExpireConditionAlways); err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, _, err := e.GetAndExpire(k, time.Hour); err != nil {
				t.Fatal(err)
			}
		case 3:
			if _, err := e.Persist(k); err != nil {
				t.Fatal(err)
			}
		}
		if g, _ := recordOf(t, e, k); f&flagDeadline == 0 && g&flagDeadline != 0 {
			moves++
		}
		if i%16 == 0 {
			clk.Advance(time.Second) // never past a key's hour
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for m := range errs {
		t.Error(m)
	}
	for _, ss := range seen {
		for _, o := range ss {
			if v, ok := versionOf.Load(o.no); !ok || v.(uint64) != o.version {
				t.Errorf("a read found write %d's value with version %d; that write made version %v", o.no, o.version, v)
			}
		}
	}
	if moves < 20 || opened < 20 {
		t.Fatalf("only %d TTLs moved a record, %d compactions opened the shard: the test exercises little", moves, opened)
	}
	t.Logf("%d moves, %d compactions open to readers", moves, opened)
	mustCheck(t, e)
}
