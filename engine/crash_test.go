package engine

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash test: a child process (this test binary, re-executed into
// TestCrashChild) writes to an engine with a log and reports every
// acknowledged write on its stdout; the parent kills it with SIGKILL at a
// random moment, reopens the directory and checks what survived against
// what was acknowledged. Each round writes under its own prefix into the
// same directory, so later rounds also check that earlier rounds' state
// survives further crashes and rewrites.

const (
	crashWorkers  = 4
	crashSKeys    = 8
	crashEKeys    = 4
	envCrashDir   = "TIDE_CRASH_DIR"
	envCrashRound = "TIDE_CRASH_ROUND"
	envCrashSync  = "TIDE_CRASH_SYNC"
)

// crashOp is worker op n: its kind and the keys (relative to the worker)
// it changes. The sequence is deterministic, so the parent knows the op a
// killed worker had in flight.
//
//	S  set s<i> = n (with a 1 h TTL every other time)
//	C  increment c
//	X  compare-and-swap cas to n (a plain set the first time)
//	B  commit a = n and b = n
//	D  delete s<j>
//	E  set e<i> = n with a 1 ms TTL (due by recovery)
func crashOp(n int) (kind byte, keys []string) {
	i := n / 6
	switch kind = "SCXBDE"[n%6]; kind {
	case 'S':
		return kind, []string{fmt.Sprint("s", i%crashSKeys)}
	case 'C':
		return kind, []string{"c"}
	case 'X':
		return kind, []string{"cas"}
	case 'B':
		return kind, []string{"a", "b"}
	case 'D':
		return kind, []string{fmt.Sprint("s", (i+3)%crashSKeys)}
	}
	return kind, []string{fmt.Sprint("e", i%crashEKeys)}
}

// TestCrashChild is the child of TestCrashKill9; it does nothing unless
// run by it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	if dir == "" {
		t.Skip("run by TestCrashKill9")
	}
	round := os.Getenv(envCrashRound)
	policy, _ := strconv.Atoi(os.Getenv(envCrashSync))
	e, err := New(Config{Durability: Durability{Dir: dir, Sync: SyncPolicy(policy), RewritePercent: NoAutoRewrite}})
	if err != nil {
		fmt.Fprintln(os.Stdout, "ERR", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	ack := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		// One write per line: a line fully read by the parent was
		// acknowledged.
		io.WriteString(os.Stdout, fmt.Sprintf(format, args...)+"\n")
	}
	fail := func(err error) {
		ack("ERR %v", err)
		os.Exit(2)
	}
	go func() {
		// Rewrites while writing, so kills also land inside them.
		for {
			time.Sleep(15 * time.Millisecond)
			if err := e.Rewrite(); err != nil {
				fail(err)
			}
		}
	}()
	for w := range crashWorkers {
		go func() {
			p := fmt.Sprintf("%s/%d/", round, w)
			var casV uint64
			for n := 0; ; n++ {
				kind, keys := crashOp(n)
				val := []byte(strconv.Itoa(n))
				switch kind {
				case 'S':
					ttl := NoTTL
					if (n/6)%2 == 0 {
						ttl = time.Hour
					}
					v, _, err := e.SetWith(p+keys[0], val, SetOptions{TTL: ttl})
					if err != nil {
						fail(err)
					}
					ack("%d %d %d", w, n, v)
				case 'C':
					c, err := e.Incr(p + keys[0])
					if err != nil {
						fail(err)
					}
					ack("%d %d %d", w, n, c)
				case 'X':
					var v uint64
					var ok bool
					var err error // this worker's own: the outer err is the parent's
					if casV == 0 {
						v, err = e.Set(p+keys[0], val)
						ok = true
					} else {
						v, ok, err = e.CompareAndSwap(p+keys[0], casV, val)
					}
					if err != nil || !ok {
						fail(fmt.Errorf("cas: %v %v", ok, err))
					}
					casV = v
					ack("%d %d %d", w, n, v)
				case 'B':
					vs, ok, err := e.Commit(nil, []Op{{Key: p + "a", Value: val, TTL: NoTTL}, {Key: p + "b", Value: val, TTL: NoTTL}})
					if err != nil || !ok {
						fail(fmt.Errorf("commit: %v %v", ok, err))
					}
					ack("%d %d %d %d", w, n, vs[0], vs[1])
				case 'D':
					_, _, err := e.DeleteWith(p+keys[0], DeleteOptions{})
					if err != nil {
						fail(err)
					}
					ack("%d %d", w, n)
				case 'E':
					if _, err := e.SetTTL(p+keys[0], val, time.Millisecond); err != nil {
						fail(err)
					}
					ack("%d %d", w, n)
				}
			}
		}()
	}
	select {} // killed by the parent
}

// crashState is the parent's model of one key.
type crashState struct {
	present bool
	val     string
	ver     uint64 // 0 = unknown (counters)
	ttl     bool
}

func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	rounds := 12
	if os.Getenv("TIDE_SOAK") != "" {
		rounds = 300
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var maxAcked uint64
	survived := map[string]Item{} // earlier rounds' recovered state
	for round := range rounds {
		policy := SyncAlways
		if round%2 == 1 {
			// A process crash loses nothing acknowledged under everysec
			// either: the kernel has every written record.
			policy = SyncEverySecond
		}
		runFor := time.Duration(5+rng.IntN(60)) * time.Millisecond
		if policy == SyncAlways {
			runFor *= 2 // each write waits for an fsync: fewer per ms
		}
		acks := runCrashChild(t, dir, round, policy, runFor)
		t.Logf("round %d (%v): %d, %d, %d, %d ops acknowledged", round, policy, len(acks[0]), len(acks[1]), len(acks[2]), len(acks[3]))
		time.Sleep(5 * time.Millisecond) // the 1 ms TTLs are due
		e, err := New(Config{Durability: Durability{Dir: dir, RewritePercent: NoAutoRewrite}})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		got := dump(e)
		prefix := fmt.Sprint(round, "/")
		var roundMax uint64
		for w := range crashWorkers {
			model := map[string]crashState{}
			last := -1
			for _, a := range acks[w] {
				last = a.n
				kind, keys := crashOp(a.n)
				switch kind {
				case 'S':
					model[keys[0]] = crashState{true, strconv.Itoa(a.n), a.v[0], (a.n/6)%2 == 0}
				case 'C':
					model[keys[0]] = crashState{present: true, val: strconv.FormatUint(a.v[0], 10)}
				case 'X':
					model[keys[0]] = crashState{present: true, val: strconv.Itoa(a.n), ver: a.v[0]}
				case 'B':
					model["a"] = crashState{present: true, val: strconv.Itoa(a.n), ver: a.v[0]}
					model["b"] = crashState{present: true, val: strconv.Itoa(a.n), ver: a.v[1]}
				case 'D', 'E':
					model[keys[0]] = crashState{}
				}
				for _, v := range a.v {
					if kind != 'C' {
						maxAcked = max(maxAcked, v)
					}
				}
			}
			inKind, inKeys := crashOp(last + 1)
			p := fmt.Sprintf("%d/%d/", round, w)
			all := []string{"c", "cas", "a", "b"}
			for i := range crashSKeys {
				all = append(all, fmt.Sprint("s", i))
			}
			for i := range crashEKeys {
				all = append(all, fmt.Sprint("e", i))
			}
			for _, k := range all {
				want := model[k]
				it, ok := got[p+k]
				if ok {
					roundMax = max(roundMax, it.Version)
				}
				if k[0] == 'e' && ok {
					t.Fatalf("round %d: %s%s: an expired key was restored", round, p, k)
				}
				if crashMatches(want, it, ok, k == "c") {
					continue
				}
				inflight := false
				for _, ik := range inKeys {
					inflight = inflight || ik == k
				}
				if inflight && crashMatchesInflight(inKind, last+1, want, it, ok) {
					continue
				}
				t.Fatalf("round %d (%v): %s%s: got %+v (present %v), acknowledged %+v, in flight op %d %c",
					round, policy, p, k, it, ok, want, last+1, inKind)
			}
			if a, b := got[p+"a"], got[p+"b"]; string(a.Value) != string(b.Value) {
				t.Fatalf("round %d: partial commit: a = %q, b = %q", round, a.Value, b.Value)
			}
		}
		// Earlier rounds' state survived this crash, versions included.
		for k, it := range survived {
			if g, ok := got[k]; !ok || string(g.Value) != string(it.Value) || g.Version != it.Version {
				t.Fatalf("round %d: %q from an earlier round: got %+v (present %v), want %+v", round, k, g, ok, it)
			}
		}
		for k, it := range got {
			if strings.HasPrefix(k, prefix) {
				survived[k] = it
			} else if _, ok := survived[k]; !ok {
				t.Fatalf("round %d: %q resurrected", round, k)
			}
		}
		// Versions are never reused: every shard hands out versions
		// above everything acknowledged or recovered.
		for i := range 256 {
			v, err := e.Set(fmt.Sprint("probe", i), nil)
			if err != nil {
				t.Fatal(err)
			}
			if v <= maxAcked || v <= roundMax {
				t.Fatalf("round %d: version %d after restart, acknowledged up to %d", round, v, maxAcked)
			}
			e.Delete(fmt.Sprint("probe", i))
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func crashMatches(want crashState, it Item, ok, counter bool) bool {
	if !want.present || !ok {
		return want.present == ok
	}
	if string(it.Value) != want.val || (want.ttl != (it.TTL != NoTTL)) {
		return false
	}
	return counter || it.Version == want.ver
}

// crashMatchesInflight reports whether the key shows the effect of op n
// (kind), which was in flight when the child died.
func crashMatchesInflight(kind byte, n int, acked crashState, it Item, ok bool) bool {
	switch kind {
	case 'D', 'E':
		return !ok
	case 'C':
		prev, _ := strconv.Atoi(acked.val)
		return ok && string(it.Value) == strconv.Itoa(prev+1)
	}
	return ok && string(it.Value) == strconv.Itoa(n) && it.Version > acked.ver
}

type crashAck struct {
	n int
	v []uint64
}

// runCrashChild runs one child round until it has written for about
// runFor, kills it, and returns each worker's acknowledged ops in order.
func runCrashChild(t *testing.T, dir string, round int, policy SyncPolicy, runFor time.Duration) [crashWorkers][]crashAck {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashRound+"="+strconv.Itoa(round), envCrashSync+"="+strconv.Itoa(int(policy)))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks [crashWorkers][]crashAck
	var mu sync.Mutex
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) > 0 && f[0] == "ERR" {
				done <- fmt.Errorf("child: %s", sc.Text())
				return
			}
			if len(f) < 2 {
				continue // not a line of ours
			}
			w, err1 := strconv.Atoi(f[0])
			n, err2 := strconv.Atoi(f[1])
			if err1 != nil || err2 != nil || w < 0 || w >= crashWorkers {
				continue
			}
			a := crashAck{n: n}
			for _, s := range f[2:] {
				v, _ := strconv.ParseUint(s, 10, 64)
				a.v = append(a.v, v)
			}
			mu.Lock()
			acks[w] = append(acks[w], a)
			mu.Unlock()
			once.Do(func() { close(first) })
		}
		done <- nil
	}()
	select {
	case <-first:
	case err := <-done:
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("round %d: child ended before writing: %v", round, err)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("round %d: child wrote nothing", round)
	}
	time.Sleep(runFor)
	cmd.Process.Signal(syscall.SIGKILL)
	if err := <-done; err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return acks
}
