package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// TestForeignKeys: a key that Set or Incr did not write (a Redis string,
// list or sorted set written by something else, or a decision's record) is
// reported the same way by every primitive that reads it: ErrCorrupt, with
// the key left as it was. Set without a condition replaces it, as on the
// embedded engine, keeping its TTL under KeepTTL; Delete deletes it.
func TestForeignKeys(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	c := srv.Client(t)
	b, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	foreign := []struct {
		name  string
		write func(k string) error
	}{
		{"string", func(k string) error { return c.Set(ctx, k, "12", 0).Err() }},
		{"list", func(k string) error { return c.RPush(ctx, k, "1").Err() }},
		{"zset", func(k string) error { return c.ZAdd(ctx, k, redisZ(1, "m")).Err() }},
		{"lease record", func(k string) error {
			return b.Decide(ctx, &store.Lease{Op: store.LeaseAcquire, Key: k, FenceKey: k + ":fence", Holder: "h", TTL: time.Hour})
		}},
		{"sliding window", func(k string) error {
			return b.Decide(ctx, &store.SlidingWindow{Key: k, Limit: 5, Window: time.Hour, Cost: 1})
		}},
	}
	for _, f := range foreign {
		t.Run(f.name, func(t *testing.T) {
			k := "{" + f.name + "}"
			fresh := func() {
				t.Helper()
				c.Del(ctx, k)
				if err := f.write(k); err != nil {
					t.Fatal(err)
				}
				c.PExpire(ctx, k, time.Hour)
			}
			unchanged := func(op string) {
				t.Helper()
				if typ, _ := c.Type(ctx, k).Result(); typ == "none" {
					t.Errorf("%s: the foreign key was deleted", op)
				}
			}
			fresh()
			if _, _, err := b.Get(ctx, k); !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("Get: got %v, want ErrCorrupt", err)
			}
			if n, err := b.Incr(ctx, k, 1, store.IncrOptions{}); !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("Incr: got (%d, %v), want ErrCorrupt", n, err)
			}
			unchanged("Incr")
			if f.name != "lease record" { // its hash carries a version
				if _, ok, err := b.Set(ctx, k, []byte("x"), store.SetOptions{IfVersion: 1}); !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("Set IfVersion: got (%v, %v), want ErrCorrupt", ok, err)
				}
				unchanged("Set IfVersion")
				if ok, err := b.CompareAndDelete(ctx, k, 1); !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("CompareAndDelete: got (%v, %v), want ErrCorrupt", ok, err)
				}
				unchanged("CompareAndDelete")
			}
			if _, ok, err := b.Set(ctx, k, []byte("x"), store.SetOptions{Only: store.IfAbsent}); ok || err != nil {
				t.Errorf("Set IfAbsent: got (%v, %v), want (false, nil): the key exists", ok, err)
			}
			if _, ok, err := b.Set(ctx, k, []byte("kept"), store.SetOptions{KeepTTL: true}); !ok || err != nil {
				t.Fatalf("Set KeepTTL: got (%v, %v), want (true, nil)", ok, err)
			}
			it, ok, err := b.Get(ctx, k)
			if !ok || err != nil || string(it.Value) != "kept" || it.TTL <= 0 || it.TTL > time.Hour {
				t.Errorf("Get after Set KeepTTL: got (%q, ttl %v, %v, %v), want (\"kept\", about 1h)", it.Value, it.TTL, ok, err)
			}
			fresh()
			if _, ok, err := b.Set(ctx, k, []byte("new"), store.SetOptions{}); !ok || err != nil {
				t.Fatalf("Set: got (%v, %v), want (true, nil)", ok, err)
			}
			if it, _, err := b.Get(ctx, k); err != nil || string(it.Value) != "new" || it.TTL != store.NoTTL {
				t.Errorf("Get after Set: got (%q, ttl %v, %v), want (\"new\", no TTL)", it.Value, it.TTL, err)
			}
			if f.name == "string" || f.name == "list" || f.name == "zset" {
				// Decisions read such a key as corrupt too (a sorted set is
				// a sliding window's own encoding).
				for _, d := range []store.Decision{
					&store.TokenBucket{Key: k, Capacity: 5, Interval: time.Second, Cost: 1},
					&store.FixedWindow{Key: k, Limit: 5, Window: time.Hour, Cost: 1},
					&store.SlidingWindow{Key: k, Limit: 5, Window: time.Hour, Cost: 1},
					&store.Idempotency{Op: store.IdemClaim, Key: k, Fingerprint: []byte("fp"), Owner: "o", Lease: time.Minute, Retention: time.Hour},
					&store.Lease{Op: store.LeaseAcquire, Key: k, FenceKey: k + ":fence", Holder: "h", TTL: time.Hour},
					&store.FlagWrite{Key: k, AuditKey: k + ":audit", Value: []byte("v"), Audit: []byte("a")},
				} {
					if _, own := d.(*store.SlidingWindow); own && f.name == "zset" {
						continue
					}
					fresh()
					if err := b.Decide(ctx, d); !errors.Is(err, store.ErrCorrupt) {
						t.Errorf("Decide %T: got %v, want ErrCorrupt", d, err)
					}
					unchanged(fmt.Sprintf("Decide %T", d))
				}
			}
			fresh()
			if ok, err := b.Delete(ctx, k); !ok || err != nil {
				t.Errorf("Delete: got (%v, %v), want (true, nil)", ok, err)
			}
		})
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
