package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/ratelimit"
	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// TestSentinel runs the suites through a failover client on a Sentinel
// deployment (a master, a replica, one sentinel): the client finds the
// master by asking the sentinel.
func TestSentinel(t *testing.T) {
	t.Parallel()
	s := redisserver.StartSentinel(t)
	client := s.Client(t)
	ctx := context.Background()
	t.Run("Check", func(t *testing.T) {
		b, _ := redisstore.New(redisstore.Config{Client: client})
		if err := b.Check(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Replicated", func(t *testing.T) {
		b, _ := redisstore.New(redisstore.Config{Client: client, Prefix: "repl:"})
		if _, _, err := b.Set(ctx, "k", []byte("v"), store.SetOptions{TTL: store.NoTTL}); err != nil {
			t.Fatal(err)
		}
		if n, err := client.Wait(ctx, 1, 5000).Result(); err != nil || n != 1 {
			t.Fatalf("WAIT 1: got (%d, %v), want the write on the replica", n, err)
		}
		if v, err := s.Replica.Client(t).HGet(ctx, "repl:k", "v").Result(); err != nil || v != "v" {
			t.Fatalf("replica holds (%q, %v), want \"v\"", v, err)
		}
	})
	nf := newFixtureFunc(client, "s")
	t.Run("Conformance", func(t *testing.T) { storetest.Run(t, nf) })
	t.Run("UseCases", func(t *testing.T) { storetest.RunUseCases(t, nf) })
	t.Run("Failover", func(t *testing.T) { testFailover(t, s, client) })
}

// testFailover: after a Sentinel failover (the replica promoted), the same
// client and Backend reach the new master, and what was written before it
// and replicated is there: a rate limit's count, a fencing counter (the
// next token is still higher).
func testFailover(t *testing.T, s *redisserver.Sentinel, client *redis.Client) {
	ctx := context.Background()
	b, _ := redisstore.New(redisstore.Config{Client: client, Prefix: "failover:"})
	leases, err := lease.New(lease.Config{Backend: b, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := ratelimit.New(ratelimit.Config{Name: "sms", Backend: b, Algorithm: ratelimit.FixedWindow, Limit: 3, Period: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l, _, ok, err := leases.Acquire(ctx, "orders", "a")
	if !ok || err != nil {
		t.Fatalf("Acquire: (%v, %v)", ok, err)
	}
	if _, err := leases.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r, err := limiter.Allow(ctx, "k"); !r.Allowed || err != nil {
			t.Fatalf("Allow: (%v, %v)", r.Allowed, err)
		}
	}
	if n, err := client.Wait(ctx, 1, 5000).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: (%d, %v)", n, err)
	}

	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr})
	defer sc.Close()
	// NOGOODSLAVE: the sentinel has not heard from the replica recently
	// enough (a loaded machine); ask again.
	for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		err := sc.Failover(ctx, redisserver.MasterName).Err()
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "NOGOODSLAVE") || time.Since(start) > 20*time.Second {
			t.Fatalf("SENTINEL FAILOVER: %v", err)
		}
	}
	// Until the client has followed the switch, calls fail (the old master
	// refuses writes, connections are closed): with ErrUnavailable, never
	// with a wrong answer.
	var l2 *lease.Lease
	deadline := time.Now().Add(30 * time.Second)
	for {
		addr, err := sc.GetMasterAddrByName(ctx, redisserver.MasterName).Result()
		if err == nil && len(addr) == 2 && "127.0.0.1:"+addr[1] == s.Replica.Addr {
			l2, _, ok, err = leases.Acquire(ctx, "orders", "b")
			if err == nil {
				break
			}
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("Acquire during the failover: %v, want ErrUnavailable or success", err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successful call on the promoted replica %s within 30s (master %v, %v)", s.Replica.Addr, addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !ok || l2.Token <= l.Token {
		t.Fatalf("Acquire after the failover: got (%v, token %d), want a token above %d", ok, l2.Token, l.Token)
	}
	if r, err := limiter.Allow(ctx, "k"); !r.Allowed || r.Remaining != 0 || err != nil {
		t.Fatalf("third Allow after the failover: got (%v, remaining %d, %v), want the last one of 3", r.Allowed, r.Remaining, err)
	}
	if r, err := limiter.Allow(ctx, "k"); r.Allowed || err != nil {
		t.Fatalf("fourth Allow after the failover: got (%v, %v), want denied: the count survived", r.Allowed, err)
	}
	if err := b.Check(ctx); err != nil {
		t.Fatalf("Check on the new master: %v", err)
	}
}
