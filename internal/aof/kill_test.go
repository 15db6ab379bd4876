package aof_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidekv/tide/internal/aof"
)

// TestKillDuringAppends runs appenders in a child process on the real file
// system, reads each acknowledged append from the child's stdout, kills the
// child with SIGKILL at an arbitrary moment (while appends and rewrites
// are in flight), and checks that the reopened log holds every
// acknowledged record: a process crash loses nothing acknowledged, under
// every policy. Several rounds reuse the directory, so recovery of a
// killed log is itself killed and recovered.
func TestKillDuringAppends(t *testing.T) {
	if os.Getenv("AOF_KILL_CHILD") != "" {
		killChild()
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, p := range []aof.SyncPolicy{aof.SyncAlways, aof.SyncEverySecond, aof.SyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			dir := t.TempDir()
			acked := state{}
			for round := range 3 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringAppends$")
				cmd.Env = append(os.Environ(), "AOF_KILL_CHILD=1", "AOF_DIR="+dir, "AOF_POLICY="+strconv.Itoa(int(p)), "AOF_ROUND="+strconv.Itoa(round))
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				sc := bufio.NewScanner(out)
				lines := 0
				for sc.Scan() {
					k, v, ok := strings.Cut(sc.Text(), "=")
					if !ok {
						continue
					}
					ack(acked, k, v)
					if lines++; lines == 100+round*70 {
						cmd.Process.Signal(syscall.SIGKILL)
						break
					}
				}
				// Acknowledgements already in the pipe were acknowledged
				// before the kill: read them too.
				for sc.Scan() {
					if k, v, ok := strings.Cut(sc.Text(), "="); ok {
						ack(acked, k, v)
					}
				}
				cmd.Wait()
				got := state{}
				l, _, err := aof.Open(aof.Config{Dir: dir}, 0, got.apply)
				if err != nil {
					t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
				}
				l.Close()
				for k, w := range acked {
					if g, ok := got[k]; !ok || g.Version < w.Version {
						t.Fatalf("round %d: acknowledged %s=%d, recovered %+v (present %v)", round, k, w.Version, g, ok)
					}
				}
				acked = got // unacknowledged appends may have survived too
			}
		})
	}
}

// ack records an acknowledged version: the highest per key (versions
// increase in append order; lines may arrive out of that order).
func ack(acked state, k, v string) {
	ver, _ := strconv.ParseUint(v, 10, 64)
	if ver > acked[k].Version {
		acked.apply(set(k, v, ver))
	}
}

// killChild appends from several goroutines until killed, printing each
// acknowledged record, and rewrites now and then. Keys live in shards, each
// under its own mutex held across the append and the change of its map, as
// the engine's shard locks: appends to different shards run concurrently
// and share writes and fsyncs.
func killChild() {
	p, _ := strconv.Atoi(os.Getenv("AOF_POLICY"))
	round, _ := strconv.Atoi(os.Getenv("AOF_ROUND"))
	var shards [4]struct {
		mu      sync.Mutex
		st      state
		counter uint64 // versions increase in append order per shard
	}
	for i := range shards {
		shards[i].st = state{}
	}
	shardOf := func(k string) int { n, _ := strconv.Atoi(k[1:]); return n % len(shards) }
	l, _, err := aof.Open(aof.Config{Dir: os.Getenv("AOF_DIR"), Sync: aof.SyncPolicy(p)}, 0, func(r *aof.Record) error {
		return shards[shardOf(r.Key)].st.apply(r)
	})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				k := fmt.Sprintf("k%d", (i*7+g)%97) // goroutines share keys
				sh := &shards[shardOf(k)]
				sh.mu.Lock()
				sh.counter++
				ver := uint64(round+1)<<32 | sh.counter
				r := set(k, strconv.FormatUint(ver, 10), ver)
				err := l.Append(r)
				if err == nil {
					sh.st.apply(r)
				}
				sh.mu.Unlock()
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				outMu.Lock()
				fmt.Fprintf(w, "%s=%d\n", k, ver)
				w.Flush()
				outMu.Unlock()
			}
		}()
	}
	// Rewrite now and then; not too often, as a base written from memory
	// would cover up appends the log lost.
	for {
		time.Sleep(30 * time.Millisecond)
		// The source reads the shards when the rewrite asks, after its
		// switch: a copy taken before would miss appends made between the
		// copy and the switch.
		l.Rewrite(funcSource(func(emit func(*aof.Record) error) error {
			for i := range shards {
				shards[i].mu.Lock()
				recs := make([]aof.Record, 0, len(shards[i].st))
				for _, r := range shards[i].st {
					recs = append(recs, r)
				}
				shards[i].mu.Unlock()
				for j := range recs {
					if err := emit(&recs[j]); err != nil {
						return err
					}
				}
			}
			return nil
		}))
	}
}

type funcSource func(emit func(*aof.Record) error) error

func (funcSource) Versions() []uint64                           { return nil }
func (f funcSource) Records(emit func(*aof.Record) error) error { return f(emit) }
