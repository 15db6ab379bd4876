package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// TestForeignKeys: a key that Set did not write (a Redis string, list or
// sorted set written by something else, or a decision's record) is reported
// the same way by every primitive that reads it: ErrCorrupt, with the key
// left as it was. Set without a condition replaces it, as on the embedded
// engine; Delete deletes it.
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
			return b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: k, FenceKey: k + ":fence", Holder: "h", TTL: time.Hour})
		}},
		{"sliding window", func(k string) error {
			return b.SlidingWindow(ctx, &store.SlidingWindow{Key: k, Limit: 5, Window: time.Hour, Cost: 1})
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
			if f.name != "lease record" { // its hash carries a version
				if _, ok, err := b.Set(ctx, k, []byte("x"), store.SetOptions{IfVersion: 1, TTL: store.NoTTL}); !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("Set IfVersion: got (%v, %v), want ErrCorrupt", ok, err)
				}
				unchanged("Set IfVersion")
				if ok, err := b.CompareAndDelete(ctx, k, 1); !errors.Is(err, store.ErrCorrupt) {
					t.Errorf("CompareAndDelete: got (%v, %v), want ErrCorrupt", ok, err)
				}
				unchanged("CompareAndDelete")
			}
			if _, ok, err := b.Set(ctx, k, []byte("x"), store.SetOptions{IfAbsent: true, TTL: store.NoTTL}); ok || err != nil {
				t.Errorf("Set IfAbsent: got (%v, %v), want (false, nil): the key exists", ok, err)
			}
			if _, ok, err := b.Set(ctx, k, []byte("new"), store.SetOptions{TTL: store.NoTTL}); !ok || err != nil {
				t.Fatalf("Set: got (%v, %v), want (true, nil)", ok, err)
			}
			if it, _, err := b.Get(ctx, k); err != nil || string(it.Value) != "new" || it.TTL != store.NoTTL {
				t.Errorf("Get after Set: got (%q, ttl %v, %v), want (\"new\", no TTL)", it.Value, it.TTL, err)
			}
			if f.name == "string" || f.name == "list" || f.name == "zset" {
				// Decisions read such a key as corrupt too (a sorted set is
				// a sliding window's own encoding).
				for _, d := range []struct {
					name   string
					decide func() error
				}{
					{"TokenBucket", func() error {
						return b.TokenBucket(ctx, &store.TokenBucket{Key: k, Capacity: 5, Interval: time.Second, Cost: 1})
					}},
					{"FixedWindow", func() error {
						return b.FixedWindow(ctx, &store.FixedWindow{Key: k, Limit: 5, Window: time.Hour, Cost: 1})
					}},
					{"SlidingWindow", func() error {
						return b.SlidingWindow(ctx, &store.SlidingWindow{Key: k, Limit: 5, Window: time.Hour, Cost: 1})
					}},
					{"Idempotency", func() error {
						return b.Idempotency(ctx, &store.Idempotency{Op: store.IdemClaim, Key: k, Fingerprint: []byte("fp"), Owner: "o", Lease: time.Minute, Retention: time.Hour})
					}},
					{"Lease", func() error {
						return b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: k, FenceKey: k + ":fence", Holder: "h", TTL: time.Hour})
					}},
					{"FlagWrite", func() error {
						return b.FlagWrite(ctx, &store.FlagWrite{Key: k, AuditKey: k + ":audit", Value: []byte("v"), Audit: []byte("a")})
					}},
				} {
					if d.name == "SlidingWindow" && f.name == "zset" {
						continue
					}
					fresh()
					if err := d.decide(); !errors.Is(err, store.ErrCorrupt) {
						t.Errorf("%s: got %v, want ErrCorrupt", d.name, err)
					}
					unchanged(d.name)
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
