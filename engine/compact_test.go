package engine

import (
	"fmt"
	"strings"
	"testing"
)

// setCompactingHook installs testHookCompacting for the test.
func setCompactingHook(t *testing.T, f func(s *shard)) {
	t.Cleanup(func() { testHookCompacting = nil })
	testHookCompacting = f
}

// A compaction (an arena rebuilt or moved into a larger array) or a growth
// of the hash table, which take time proportional to the shard, leave the
// shard open to lock-free readers: while the writer copies, a reader of the same shard finds every
// key and reads its value without waiting. The hook runs inside the
// compaction, on the writer's goroutine, and reads the way Get does.
func TestCompactionLeavesTheShardReadable(t *testing.T) {
	for _, shape := range []string{"rebuild", "move", "table"} {
		t.Run(shape, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 1})
			const stable = 100 // keys 0..99 are never rewritten
			for i := range 2 * stable {
				if _, err := e.Set(fmt.Sprintf("k%d", i), []byte(fmt.Sprintf("v%d", i))); err != nil {
					t.Fatal(err)
				}
			}
			opened, read, tableOpens := 0, 0, 0
			setCompactingHook(t, func(s *shard) {
				opened++
				if s.tab.Full() {
					tableOpens++
				}
				for i := 0; i < stable; i += 3 {
					k := fmt.Sprintf("k%d", i)
					_, h := e.shardFor(k)
					var pk peeked
					e.peek(s, k, h, false, &pk)
					if pk.r != peekHit {
						t.Errorf("peek(%s) during a compaction = %d, want a hit", k, pk.r)
						continue
					}
					v := loadValue(nil, pk.arena, pk.val, pk.vlen)
					if !pk.valid(s) {
						t.Errorf("read of %s during a compaction did not validate", k)
					}
					if want := fmt.Sprintf("v%d", i); string(v) != want {
						t.Errorf("read %s = %q during a compaction, want %q", k, v, want)
					}
					read++
				}
			})
			if shape == "table" {
				for i := range 20000 { // the table grows several times
					if _, err := e.Set(fmt.Sprintf("t%d", i), nil); err != nil {
						t.Fatal(err)
					}
				}
				if tableOpens == 0 {
					t.Fatal("no growth of the table opened the shard to readers")
				}
			}
			for round := range 6 {
				if shape == "table" {
					break
				}
				for i := stable; i < 2*stable; i++ {
					var v string
					if shape == "rebuild" {
						v = strings.Repeat("x", 8*(round+2)) // longer each round: appends, garbage
					} else {
						v = fmt.Sprintf("v%d", i) // same length: in place; new keys grow the arena
						if _, err := e.Set(fmt.Sprintf("n%d-%d", round, i), []byte(v)); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := e.Set(fmt.Sprintf("k%d", i), []byte(v)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if opened == 0 || read == 0 {
				t.Fatalf("%d compactions opened the shard, %d reads in them: the test exercises nothing", opened, read)
			}
			mustCheck(t, e)
		})
	}
}

// A Commit whose write needs a compaction halfway through its ops does not
// open the shard to readers: a reader would see some of the transaction's
// writes and not the others.
func TestCompactionInsideACommitShowsNoPartialCommit(t *testing.T) {
	e, _ := newTest(t, Config{Shards: 1})
	s := &e.shards[0]
	opened := 0
	setCompactingHook(t, func(*shard) { opened++ })
	compactions := 0
	for i := 0; compactions == 0 && i < 1000; i++ {
		// Fill until the arena has less room than a big record, then
		// commit a small write (fits) and a big one (compacts).
		for cap(s.arena)-len(s.arena) > 512 {
			if _, err := e.Set(fmt.Sprintf("f%d-%d", i, len(s.arena)), []byte("filler")); err != nil {
				t.Fatal(err)
			}
		}
		before := cap(s.arena)
		opened = 0
		_, ok, err := e.Commit(nil, []Op{
			{Key: fmt.Sprintf("a%d", i), Value: []byte("small"), TTL: NoTTL},
			{Key: fmt.Sprintf("b%d", i), Value: make([]byte, 1024), TTL: NoTTL},
		})
		if err != nil || !ok {
			t.Fatalf("Commit = %v, %v", ok, err)
		}
		if cap(s.arena) != before {
			compactions++
			if opened != 0 {
				t.Fatalf("a compaction inside a Commit opened the shard to readers %d time(s)", opened)
			}
		}
	}
	if compactions == 0 {
		t.Fatal("no Commit compacted: the test exercises nothing")
	}
	mustCheck(t, e)
}
