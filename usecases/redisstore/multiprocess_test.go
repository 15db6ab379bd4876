package redisstore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
)

// budgetChildEnv, when set to a server address, makes the test binary a
// child process of TestProcessesShareBudget.
const budgetChildEnv = "REDISSTORE_BUDGET_CHILD"

const (
	budgetProcs   = 3
	budgetLimit   = 60
	budgetTries   = 2 * budgetLimit // per process
	budgetCallers = 8               // concurrent callers per process
)

// TestProcessesShareBudget: three OS processes (this test binary,
// re-executed) share one fixed-window budget of budgetLimit per hour on
// one Redis, each trying twice the budget with concurrent callers, all
// starting together. Together they admit exactly the budget; each
// process's own limiter in memory would have admitted three times it.
func TestProcessesShareBudget(t *testing.T) {
	if addr := os.Getenv(budgetChildEnv); addr != "" {
		budgetChild(t, addr)
		return
	}
	srv := redisserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type child struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out bytes.Buffer
	}
	children := make([]*child, budgetProcs)
	for i := range children {
		c := &child{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^TestProcessesShareBudget$", "-test.count=1", "-test.v")}
		c.cmd.Env = append(os.Environ(), budgetChildEnv+"="+srv.Addr)
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		var err error
		if c.in, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	// Each child connects, then waits for "go" on stdin: a start barrier.
	for _, c := range children {
		fmt.Fprintln(c.in, "go")
		c.in.Close()
	}
	admittedRE := regexp.MustCompile(`admitted (\d+) of (\d+)`)
	total := 0
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, c.out.String())
		}
		m := admittedRE.FindStringSubmatch(c.out.String())
		if m == nil {
			t.Fatalf("process %d printed no result:\n%s", i, c.out.String())
		}
		n, _ := strconv.Atoi(m[1])
		t.Logf("process %d admitted %s of %s", i, m[1], m[2])
		total += n
	}
	if total != budgetLimit {
		t.Fatalf("%d processes admitted %d in all, want exactly the shared budget %d", budgetProcs, total, budgetLimit)
	}
}

// budgetChild is one process of TestProcessesShareBudget.
func budgetChild(t *testing.T, addr string) {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: budgetCallers})
	defer client.Close()
	b, err := redisstore.New(redisstore.Config{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.Config{Name: "sms", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: budgetLimit, Period: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("waiting for the start: %v", err)
	}
	var (
		mu       sync.Mutex // guards admitted, firstErr
		admitted int
		firstErr error
		wg       sync.WaitGroup
	)
	for range budgetCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range budgetTries / budgetCallers {
				r, err := l.Allow(ctx, "sms:tenant-42")
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil && r.Allowed {
					admitted++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	fmt.Printf("admitted %d of %d\n", admitted, budgetTries)
}
