package redisserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name under which a Sentinel deployment monitors its
// master.
const MasterName = "tidemaster"

// Sentinel is a Sentinel deployment: a master, one replica of it, and one
// sentinel monitoring the master (quorum 1).
type Sentinel struct {
	Master, Replica, Sentinel *Server
}

// StartSentinel starts a master, a replica and a sentinel, and waits until
// the replica is in sync and the sentinel knows the master and the
// replica. It skips or fails as Start does.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	s := &Sentinel{Master: start(tb)}
	s.Replica = start(tb, "--replicaof", "127.0.0.1", portOf(s.Master))
	conf := filepath.Join(tb.TempDir(), "sentinel.conf")
	if err := os.WriteFile(conf, nil, 0o600); err != nil { // the sentinel rewrites it
		tb.Fatal(err)
	}
	s.Sentinel = startWith(tb, []string{conf, "--sentinel"})
	ctx := context.Background()

	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr})
	defer sc.Close()
	if err := sc.Monitor(ctx, MasterName, "127.0.0.1", portOf(s.Master), "1").Err(); err != nil {
		tb.Fatalf("redisserver: SENTINEL MONITOR: %v", err)
	}
	replica := redis.NewClient(&redis.Options{Addr: s.Replica.Addr})
	defer replica.Close()
	waitFor(tb, 20*time.Second, "the replica to sync and the sentinel to see it", func() (bool, string) {
		info, err := replica.Info(ctx, "replication").Result()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false, info
		}
		reps, err := sc.Replicas(ctx, MasterName).Result()
		if err != nil || len(reps) != 1 {
			return false, "sentinel replicas: " + err2s(err)
		}
		return true, ""
	})
	return s
}

// Client returns a failover client that finds the master through the
// sentinel, closed when the test ends.
func (s *Sentinel) Client(tb testing.TB) *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    MasterName,
		SentinelAddrs: []string{s.Sentinel.Addr},
		MaxRetries:    1,
		DialerRetries: 1,
		PoolSize:      128,
	})
	tb.Cleanup(func() { c.Close() })
	return c
}

func portOf(s *Server) string {
	_, p, _ := strings.Cut(s.Addr, "127.0.0.1:")
	return p
}

func err2s(err error) string {
	if err == nil {
		return "none yet"
	}
	return err.Error()
}

// waitFor polls cond every 50 ms until it holds, failing tb after d with
// cond's last explanation.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redisserver: waited %v for %s: %s", d, what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
