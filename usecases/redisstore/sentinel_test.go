package redisstore_test

import (
	"context"
	"testing"

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
		if _, _, err := b.Set(ctx, "k", []byte("v"), store.SetOptions{}); err != nil {
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
}
