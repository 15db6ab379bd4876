package redisserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters without replicas.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n cluster-enabled servers, splits the 16384 slots
// evenly between them, joins them, and waits until every node reports the
// cluster ok. It skips or fails as Start does.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c := &Cluster{}
	for range n {
		c.Nodes = append(c.Nodes, start(tb,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000"))
	}
	ctx := context.Background()
	admin := make([]*redis.Client, n)
	for i, s := range c.Nodes {
		admin[i] = redis.NewClient(&redis.Options{Addr: s.Addr})
		defer admin[i].Close()
	}
	const slots = 16384
	for i, a := range admin {
		lo, hi := i*slots/n, (i+1)*slots/n-1
		if err := a.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			tb.Fatalf("redisserver: CLUSTER ADDSLOTSRANGE %d %d on %s: %v", lo, hi, c.Nodes[i].Addr, err)
		}
		if err := a.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			tb.Fatalf("redisserver: CLUSTER SET-CONFIG-EPOCH on %s: %v", c.Nodes[i].Addr, err)
		}
	}
	for _, s := range c.Nodes[1:] {
		if err := admin[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(s.port)).Err(); err != nil {
			tb.Fatalf("redisserver: CLUSTER MEET %s: %v", s.Addr, err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		var last string
		for _, a := range admin {
			info, err := a.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", n)) {
				ok, last = false, info
				break
			}
		}
		if ok {
			return c
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redisserver: cluster of %d did not become ok within 20s: %s", n, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Nodes {
		a = append(a, s.Addr)
	}
	return a
}

// Client returns a cluster client, closed when the test ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: 1, DialerRetries: 1, PoolSize: 128})
	tb.Cleanup(func() { cc.Close() })
	return cc
}
