package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// BenchmarkBackend measures one call of each kind against a local
// redis-server over loopback: a round trip plus the script.
func BenchmarkBackend(b *testing.B) {
	srv := redisserver.Start(b)
	be, err := redisstore.New(redisstore.Config{Client: srv.Client(b)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	be.Set(ctx, "k", []byte("value"), store.SetOptions{TTL: store.NoTTL})
	cases := []struct {
		name string
		fn   func(i int) error
	}{
		{"Get", func(int) error { _, _, err := be.Get(ctx, "k"); return err }},
		{"Set", func(int) error {
			_, _, err := be.Set(ctx, "k", []byte("value"), store.SetOptions{TTL: store.NoTTL})
			return err
		}},
		{"TokenBucket", func(i int) error {
			return be.TokenBucket(ctx, &store.TokenBucket{Key: fmt.Sprint("tb{", i%100, "}"), Capacity: 1000, Interval: time.Millisecond, Cost: 1})
		}},
		{"FixedWindow", func(i int) error {
			return be.FixedWindow(ctx, &store.FixedWindow{Key: fmt.Sprint("fw{", i%100, "}"), Limit: 1 << 40, Window: time.Hour, Cost: 1})
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for i := range b.N {
				if err := c.fn(i); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if err := c.fn(i); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
	}
}
