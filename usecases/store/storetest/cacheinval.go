package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/cache"
)

// runCacheInvalidation checks "the next Get after Invalidate loads afresh"
// against a load that was in flight when Invalidate ran.
func runCacheInvalidation(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	t.Run("CachesDoNotCollide", func(t *testing.T) {
		f := newFixture(t)
		newCache := func(name string) *cache.Cache {
			c, err := cache.New(cache.Config{Name: name, Backend: f.Backend, Load: func(_ context.Context, k string) ([]byte, bool, error) {
				return []byte(name + " " + k), true, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		users, products := newCache("users"), newCache("products")
		for _, c := range []struct {
			c    *cache.Cache
			want string
		}{{users, "users 7"}, {products, "products 7"}, {users, "users 7"}} {
			if v, _, err := c.c.Get(ctx, "7"); string(v) != c.want || err != nil {
				t.Errorf("Get(7): got (%q, %v), want %q", v, err, c.want)
			}
		}
	})
	t.Run("LongKeysDoNotAlias", func(t *testing.T) {
		f := newFixture(t)
		c, _ := cache.New(cache.Config{Name: "c", Backend: f.Backend, Load: func(_ context.Context, k string) ([]byte, bool, error) {
			return []byte(fmt.Sprint("value of a ", len(k), "-byte key")), true, nil
		}})
		long := strings.Repeat("x", 300)
		if v, _, _ := c.Get(ctx, long); string(v) != "value of a 300-byte key" {
			t.Fatalf("Get(long): got %q", v)
		}
		for _, short := range aliasesOf(long) {
			want := fmt.Sprint("value of a ", len(short), "-byte key")
			if v, _, err := c.Get(ctx, short); string(v) != want || err != nil {
				t.Errorf("Get(%q): got (%q, %v), want %q", short, v, err, want)
			}
		}
	})
	t.Run("InvalidateDuringLoad", func(t *testing.T) {
		f := newFixture(t)
		var origin atomic.Value
		origin.Store("v1")
		var loads atomic.Int64
		entered, release := make(chan struct{}), make(chan struct{})
		c, err := cache.New(cache.Config{Name: "prices", Backend: f.Backend, Load: func(context.Context, string) ([]byte, bool, error) {
			v := origin.Load().(string)
			if loads.Add(1) == 1 {
				close(entered)
				<-release // the origin is slow; meanwhile the value changes
			}
			return []byte(v), true, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan string)
		go func() {
			v, _, _ := c.Get(ctx, "price")
			first <- string(v)
		}()
		<-entered
		origin.Store("v2")
		if err := c.Invalidate(ctx, "price"); err != nil {
			t.Fatal(err)
		}
		// A Get after Invalidate returned must not join the stale load.
		during := make(chan string)
		go func() {
			v, _, _ := c.Get(ctx, "price")
			during <- string(v)
		}()
		select {
		case v := <-during:
			if v != "v2" {
				t.Errorf("Get after Invalidate, while the stale load runs: got %q, want \"v2\"", v)
			}
			close(release)
		case <-time.After(10 * time.Second): // only on failure: it waits for the stale load
			t.Errorf("Get after Invalidate joined the load that started before it")
			close(release)
			<-during
		}
		<-first // the caller that started before Invalidate may see v1
		if v, _, err := c.Get(ctx, "price"); string(v) != "v2" || err != nil {
			t.Errorf("Get after the stale load ended: got (%q, %v), want \"v2\" (the stale load landed after Invalidate)", v, err)
		}
	})
}
