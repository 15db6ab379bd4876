// Command smsbudget is the scale-out scene: one service, two replicas, one
// hourly SMS budget. It runs the same rate limiter twice, each time in two
// separate OS processes hammering the budget concurrently:
//
//  1. each replica limits on its own in-process engine (store/embedded):
//     together they admit twice the budget;
//  2. each replica limits on one shared Redis (redisstore): together they
//     admit exactly the budget.
//
// The only difference between the two runs is the constructor of the
// limiter's backend. Run it against any Redis or Valkey:
//
//	cd usecases/redisstore && go run ./cmd/smsbudget -redis 127.0.0.1:6379
//
// It exits with status 1 if the shared limiter did not admit exactly the
// budget.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// replicaEnv, when set in the environment, makes the process a replica (a
// child of the scene) rather than the scene itself.
const replicaEnv = "SMSBUDGET_REPLICA"

type options struct {
	redis    string
	replicas int
	budget   int64
	requests int
	workers  int
	// set for a replica only
	mode, run string
	start     int64
}

func (o *options) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.redis, "redis", "", "Redis or Valkey address host:port (required)")
	fs.IntVar(&o.replicas, "replicas", 2, "number of replica processes")
	fs.Int64Var(&o.budget, "budget", 1000, "SMS per hour for the tenant")
	fs.IntVar(&o.requests, "requests", 1500, "SMS requests each replica tries to send")
	fs.IntVar(&o.workers, "workers", 16, "concurrent senders per replica")
	fs.StringVar(&o.mode, "mode", "", "replica only: embedded or redis")
	fs.StringVar(&o.run, "run", "", "replica only: run id (isolates keys)")
	fs.Int64Var(&o.start, "start", 0, "replica only: start time, Unix ns")
}

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs the scene, or a replica if replicaEnv is set, and returns the
// exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("smsbudget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.flags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if os.Getenv(replicaEnv) != "" {
		if err := replica(o, stdout); err != nil {
			fmt.Fprintln(stderr, "replica:", err)
			return 1
		}
		return 0
	}
	if o.redis == "" || o.replicas < 1 || o.budget < 1 || o.requests < 1 || o.workers < 1 {
		fmt.Fprintln(stderr, "usage: smsbudget -redis host:port [-replicas 2] [-budget 1000] [-requests 1500] [-workers 16]")
		return 2
	}
	ok, err := scene(o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "smsbudget:", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

// limiter is the SMS budget: a fixed hourly window per tenant, failing
// closed (an SMS not sent is cheaper than one over budget).
func limiter(b store.Backend, budget int64, run string) (*ratelimit.Limiter, error) {
	return ratelimit.New(ratelimit.Config{
		Name:         "sms",
		Backend:      b,
		Algorithm:    ratelimit.FixedWindow,
		Limit:        budget,
		Period:       time.Hour,
		Prefix:       "smsbudget:" + run + ":",
		OnStoreError: ratelimit.FailClosed,
	})
}

func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
}

// replica sends o.requests SMS through its limiter and prints its counts.
func replica(o options, out io.Writer) error {
	var b store.Backend
	switch o.mode {
	case "embedded":
		// The only line that differs between the two runs...
		e, err := engine.New(engine.Config{})
		if err != nil {
			return err
		}
		defer e.Close()
		if b, err = embedded.New(embedded.Config{Engine: e}); err != nil {
			return err
		}
	case "redis":
		// ...is this one.
		c := newClient(o.redis)
		defer c.Close()
		var err error
		if b, err = redisstore.New(redisstore.Config{Client: c}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown -mode %q", o.mode)
	}
	l, err := limiter(b, o.budget, o.run)
	if err != nil {
		return err
	}
	time.Sleep(time.Until(time.Unix(0, o.start))) // start together
	var admitted, denied, failed atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(o.requests) {
				r, err := l.Allow(context.Background(), "tenant-42")
				switch {
				case err != nil:
					failed.Add(1)
				case r.Allowed:
					admitted.Add(1)
				default:
					denied.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(out, "admitted=%d denied=%d failed=%d\n", admitted.Load(), denied.Load(), failed.Load())
	return nil
}

type counts struct{ admitted, denied, failed int64 }

// runReplicas starts o.replicas copies of this executable in mode and sums
// their counts.
func runReplicas(o options, mode, run string) (counts, error) {
	exe, err := os.Executable()
	if err != nil {
		return counts{}, err
	}
	start := time.Now().Add(300 * time.Millisecond).UnixNano()
	type result struct {
		out []byte
		err error
	}
	results := make([]result, o.replicas)
	var wg sync.WaitGroup
	for i := range o.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(exe,
				"-redis", o.redis, "-budget", strconv.FormatInt(o.budget, 10),
				"-requests", strconv.Itoa(o.requests), "-workers", strconv.Itoa(o.workers),
				"-mode", mode, "-run", run, "-start", strconv.FormatInt(start, 10))
			cmd.Env = append(os.Environ(), replicaEnv+"="+strconv.Itoa(i+1))
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			results[i] = result{out, err}
		}()
	}
	wg.Wait()
	var sum counts
	for i, r := range results {
		if r.err != nil {
			return sum, fmt.Errorf("replica %d (%s): %w", i+1, mode, r.err)
		}
		var c counts
		if _, err := fmt.Sscanf(strings.TrimSpace(string(r.out)), "admitted=%d denied=%d failed=%d", &c.admitted, &c.denied, &c.failed); err != nil {
			return sum, fmt.Errorf("replica %d (%s) printed %q: %w", i+1, mode, r.out, err)
		}
		sum.admitted += c.admitted
		sum.denied += c.denied
		sum.failed += c.failed
	}
	return sum, nil
}

// scene runs both runs and reports whether the shared limiter held the
// budget exactly.
func scene(o options, out io.Writer) (bool, error) {
	ctx := context.Background()
	c := newClient(o.redis)
	defer c.Close()
	b, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		return false, err
	}
	if err := b.Check(ctx); err != nil {
		return false, err
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	fmt.Fprintf(out, "Hourly SMS budget for tenant-42: %d. %d replicas, each trying to send %d SMS with %d concurrent senders (%d in all).\n\n",
		o.budget, o.replicas, o.requests, o.workers, o.replicas*o.requests)

	local, err := runReplicas(o, "embedded", run)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "  limiter in each replica's own memory (store/embedded): admitted %5d  (%.1f× the budget)\n",
		local.admitted, float64(local.admitted)/float64(o.budget))

	shared, err := runReplicas(o, "redis", run)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "  one limiter shared on Redis at %s (redisstore):   admitted %5d  (%.1f× the budget)\n",
		o.redis, shared.admitted, float64(shared.admitted)/float64(o.budget))
	if shared.failed > 0 {
		fmt.Fprintf(out, "  (%d requests failed on Redis errors and were denied: the limiter fails closed)\n", shared.failed)
	}

	// Leave nothing behind.
	l, _ := limiter(b, o.budget, run)
	l.Reset(ctx, "tenant-42")

	want := min(o.budget, int64(o.replicas*o.requests))
	ok := shared.admitted == want && shared.failed == 0
	if ok {
		fmt.Fprintf(out, "\nThe shared limiter held the budget exactly; per-process limiters admit up to %d× it.\n", o.replicas)
	} else {
		fmt.Fprintf(out, "\nFAIL: the shared limiter admitted %d, want %d.\n", shared.admitted, want)
	}
	return ok, nil
}
