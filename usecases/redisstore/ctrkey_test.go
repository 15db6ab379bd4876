package redisstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// TestCounterKeysUnreachable: the per-slot version counters ("tide:ver:{0}",
// "tide:ver:{1}", … after Prefix) share the keyspace of the keys callers
// pass; a caller's key must never reach one. Today it does: Set of
// "tide:ver:{0}" replaces slot crc16("0")'s counter with a hash, and every
// later write in that slot fails (ErrCorrupt, WRONGTYPE in nextver). Not
// fixed: moving the counters out of the callers' keyspace changes the key
// layout. Run with REDISSTORE_KNOWN_BUGS=1.
func TestCounterKeysUnreachable(t *testing.T) {
	if os.Getenv("REDISSTORE_KNOWN_BUGS") == "" {
		t.Skip("known bug: a caller's key can be a version counter; set REDISSTORE_KNOWN_BUGS=1 to run")
	}
	ctx := context.Background()
	srv := redisserver.Start(t)
	b, err := redisstore.New(redisstore.Config{Client: srv.Client(t), Prefix: "p:"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"0", "1", "a"} {
		k := "tide:ver:{" + tag + "}"
		other := "user{" + tag + "}" // a key of the same slot
		if _, ok, err := b.Set(ctx, other, []byte("before"), store.SetOptions{TTL: store.NoTTL}); !ok || err != nil {
			t.Fatalf("Set(%q): got (%v, %v), want (true, nil)", other, ok, err)
		}
		v, ok, err := b.Set(ctx, k, []byte("mine"), store.SetOptions{TTL: store.NoTTL})
		if !ok || err != nil {
			t.Fatalf("Set(%q): got (%v, %v), want (true, nil)", k, ok, err)
		}
		if it, found, err := b.Get(ctx, k); !found || err != nil || string(it.Value) != "mine" || it.Version != v {
			t.Errorf("Get(%q): got (%q, v%d, %v, %v), want (\"mine\", v%d, true, nil)", k, it.Value, it.Version, found, err, v)
		}
		if _, ok, err := b.Set(ctx, other, []byte("after"), store.SetOptions{TTL: store.NoTTL}); !ok || err != nil {
			t.Errorf("Set(%q) after Set(%q): got (%v, %v), want (true, nil)", other, k, ok, err)
		}
	}
}
