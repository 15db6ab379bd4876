package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

func TestCheck(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	c := srv.Client(t)
	b, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Check(ctx); err != nil {
		t.Fatalf("Check on noeviction: %v", err)
	}
	for _, p := range []string{"volatile-lru", "volatile-ttl"} {
		c.ConfigSet(ctx, "maxmemory-policy", p)
		if err := b.Check(ctx); err != nil {
			t.Errorf("Check on %s: %v, want nil (keys without TTL are never evicted)", p, err)
		}
	}
	c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru")
	if err := b.Check(ctx); err == nil || !strings.Contains(err.Error(), "allkeys-lru") {
		t.Errorf("Check on allkeys-lru: got %v, want an error naming the policy", err)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := redisstore.New(redisstore.Config{}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("nil client: got %v, want ErrInvalidArgument", err)
	}
	srv := redisserver.Start(t)
	if _, err := redisstore.New(redisstore.Config{Client: srv.Client(t), Prefix: "app{1}:"}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("prefix with a brace: got %v, want ErrInvalidArgument", err)
	}
}

// TestOutOfMemory: over maxmemory with noeviction, a write is refused whole
// with ErrOutOfMemory, and reads and deletes still work.
func TestOutOfMemory(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	c := srv.Client(t)
	b, _ := redisstore.New(redisstore.Config{Client: c})
	if _, _, err := b.Set(ctx, "k", []byte("v"), store.SetOptions{TTL: store.NoTTL}); err != nil {
		t.Fatal(err)
	}
	c.ConfigSet(ctx, "maxmemory", "1")
	defer c.ConfigSet(ctx, "maxmemory", "0")
	if _, _, err := b.Set(ctx, "k2", []byte("v"), store.SetOptions{TTL: store.NoTTL}); !errors.Is(err, store.ErrOutOfMemory) {
		t.Fatalf("Set over maxmemory: got %v, want ErrOutOfMemory", err)
	}
	if err := b.FixedWindow(ctx, &store.FixedWindow{Key: "fw", Limit: 1, Window: 1e9, Cost: 1}); !errors.Is(err, store.ErrOutOfMemory) {
		t.Fatalf("Decide over maxmemory: got %v, want ErrOutOfMemory", err)
	}
	if it, ok, err := b.Get(ctx, "k"); !ok || err != nil || string(it.Value) != "v" {
		t.Fatalf("Get over maxmemory: got (%q, %v, %v)", it.Value, ok, err)
	}
	if ok, err := b.Delete(ctx, "k"); !ok || err != nil {
		t.Fatalf("Delete over maxmemory: got (%v, %v)", ok, err)
	}
}
