package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// TestCluster runs the suites on a three-master Redis Cluster through a
// ClusterClient, with time moving (every node reads the same host clock):
// keys spread over the nodes, each decision's keys share a hash tag, and
// version counters live in each key's own slot. Plus: keys spread over the
// nodes, cross-slot decisions refused, any flag or lease name works, and
// Check inspects every master.
func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redisserver.StartCluster(t, 3)
	client := cl.Client(t)

	t.Run("CheckEveryMaster", func(t *testing.T) { testCheckEveryMaster(t, cl) })
	t.Run("AnyName", func(t *testing.T) { testAnyName(t, client) })
	t.Run("KeysSpreadOverNodes", func(t *testing.T) {
		ctx := context.Background()
		b, _ := redisstore.New(redisstore.Config{Client: client, Prefix: "spread:"})
		for i := range 300 {
			if _, _, err := b.Set(ctx, fmt.Sprint("k", i), []byte("v"), store.SetOptions{TTL: store.NoTTL}); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range cl.Nodes {
			c := n.Client(t)
			if size, err := c.DBSize(ctx).Result(); err != nil || size == 0 {
				t.Errorf("node %s holds %d keys (%v); want some of the 300", n.Addr, size, err)
			}
		}
	})
	t.Run("CrossSlotRefused", func(t *testing.T) {
		ctx := context.Background()
		b, _ := redisstore.New(redisstore.Config{Client: client})
		err := b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: "lease:a", FenceKey: "fence:a", Holder: "h", TTL: testUnit})
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("lease keys in two slots: got %v, want ErrInvalidArgument", err)
		}
		err = b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: "lease:{a}", FenceKey: "lease:{a}:fence", Holder: "h", TTL: testUnit})
		if err != nil {
			t.Fatalf("lease keys sharing a hash tag: %v", err)
		}
	})

	nf := newFixtureFunc(client, "c")
	t.Run("Conformance", func(t *testing.T) { storetest.Run(t, nf) })
	t.Run("UseCases", func(t *testing.T) { storetest.RunUseCases(t, nf) })
}

// braceNames are flag and lease names that a raw "{name}" hash tag would
// break on a Cluster (an empty or cut tag puts a decision's two keys in
// different slots), and names whose encodings must stay apart.
var braceNames = []string{"}beta", "{", "}", "{}", "a}b{c", "{x}", "%7D", "%", "50%", "%257D", "plain"}

// testAnyName: on a Cluster, flags and leases work for any name, and
// different names stay different.
func testAnyName(t *testing.T, client *redis.ClusterClient) {
	ctx := context.Background()
	b, err := redisstore.New(redisstore.Config{Client: client, Prefix: "names:"})
	if err != nil {
		t.Fatal(err)
	}
	flags, err := featureflag.New(featureflag.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := lease.New(lease.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range braceNames {
		if _, err := flags.Create(ctx, name, featureflag.State{Enabled: true, Rollout: i + 1}, "test", "brace name"); err != nil {
			t.Errorf("flag %q: Create: %v", name, err)
		}
		if _, _, ok, err := leases.Acquire(ctx, name, fmt.Sprint("holder-", i)); !ok || err != nil {
			t.Errorf("lease %q: Acquire: got (%v, %v), want (true, nil)", name, ok, err)
		}
	}
	for i, name := range braceNames {
		f, ok, err := flags.Get(ctx, name)
		if !ok || err != nil || f.Rollout != i+1 {
			t.Errorf("flag %q: Get: got (rollout %d, %v, %v), want rollout %d", name, f.Rollout, ok, err, i+1)
		}
		if h, err := flags.History(ctx, name); err != nil || len(h) != 1 {
			t.Errorf("flag %q: History: got %d records (%v), want 1", name, len(h), err)
		}
		info, ok, err := leases.Inspect(ctx, name)
		if !ok || err != nil || info.Holder != fmt.Sprint("holder-", i) {
			t.Errorf("lease %q: Inspect: got (%q, %v, %v), want holder-%d", name, info.Holder, ok, err, i)
		}
	}
}

// testCheckEveryMaster: a misconfigured master is reported by every Check,
// by address, whichever node the client would otherwise have asked.
func testCheckEveryMaster(t *testing.T, cl *redisserver.Cluster) {
	ctx := context.Background()
	bad := cl.Nodes[1]
	admin := bad.Client(t)
	if err := admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	for i := range 6 {
		b, _ := redisstore.New(redisstore.Config{Client: cl.Client(t)})
		err := b.Check(ctx)
		if err == nil || !strings.Contains(err.Error(), bad.Addr) || !strings.Contains(err.Error(), "allkeys-lru") {
			t.Fatalf("Check %d with allkeys-lru on master %s: got %v, want an error naming it", i, bad.Addr, err)
		}
		for _, n := range cl.Nodes {
			if n != bad && strings.Contains(err.Error(), n.Addr) {
				t.Errorf("Check %d names the well-configured master %s: %v", i, n.Addr, err)
			}
		}
	}
	admin.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	b, _ := redisstore.New(redisstore.Config{Client: cl.Client(t)})
	if err := b.Check(ctx); err != nil {
		t.Fatalf("Check with every master on noeviction: %v", err)
	}
}
