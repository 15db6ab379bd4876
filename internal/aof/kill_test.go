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
					ver, _ := strconv.ParseUint(v, 10, 64)
					acked.apply(set(k, v, ver))
					if lines++; lines == 100+round*70 {
						cmd.Process.Signal(syscall.SIGKILL)
						break
					}
				}
				// Acknowledgements already in the pipe were acknowledged
				// before the kill: read them too.
				for sc.Scan() {
					if k, v, ok := strings.Cut(sc.Text(), "="); ok {
						ver, _ := strconv.ParseUint(v, 10, 64)
						acked.apply(set(k, v, ver))
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

// killChild appends from several goroutines until killed, printing each
// acknowledged record, and rewrites now and then.
func killChild() {
	p, _ := strconv.Atoi(os.Getenv("AOF_POLICY"))
	round, _ := strconv.Atoi(os.Getenv("AOF_ROUND"))
	live := state{}
	var mu sync.Mutex // guards live and orders appends per key, as a shard lock
	l, _, err := aof.Open(aof.Config{Dir: os.Getenv("AOF_DIR"), Sync: aof.SyncPolicy(p)}, 0, live.apply)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				k := fmt.Sprintf("k%d", (i*4+g)%97)
				mu.Lock()
				ver := uint64(round+1)<<32 | uint64(i*4+g+1)
				err := l.Append(set(k, strconv.FormatUint(ver, 10), ver))
				if err == nil {
					live.apply(set(k, strconv.FormatUint(ver, 10), ver))
				}
				mu.Unlock()
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
	for {
		time.Sleep(time.Millisecond)
		l.Rewrite(lockedState{&mu, live})
	}
}

// lockedState is a Source over a state guarded by a mutex.
type lockedState struct {
	mu *sync.Mutex
	st state
}

func (s lockedState) Versions() []uint64 { return nil }

func (s lockedState) Records(emit func(*aof.Record) error) error {
	s.mu.Lock()
	recs := make([]aof.Record, 0, len(s.st))
	for _, r := range s.st {
		recs = append(recs, r)
	}
	s.mu.Unlock()
	for i := range recs {
		if err := emit(&recs[i]); err != nil {
			return err
		}
	}
	return nil
}
