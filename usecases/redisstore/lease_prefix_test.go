package redisstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
)

// A lease Manager New accepts works on a Redis Cluster: a Prefix with
// braces ("{}", "{a}{") would take the hash tag away from the lease's name
// and put its record and fence counter in two slots, refused at every call
// (while a single node, where it was tested, accepts them).
func TestLeasePrefixWithBracesOnCluster(t *testing.T) {
	t.Parallel()
	cl := redisserver.StartCluster(t, 3)
	b, err := redisstore.New(redisstore.Config{Client: cl.Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"{}", "app:{}:lease:", "{a}}:"} {
		m, err := lease.New(lease.Config{Backend: b, Prefix: prefix})
		if errors.Is(err, lease.ErrInvalidConfig) {
			continue // refused at construction: fine
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok, err := m.Acquire(context.Background(), "orders", "A"); !ok || err != nil {
			t.Errorf("Prefix %q: New accepted it, then Acquire = (%v, %v); want the lease, or ErrInvalidConfig from New", prefix, ok, err)
		}
	}
}
