package cache_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// wait returns what ch delivers, or fails the test after 10 s (only on
// failure: every case below answers at once when the code is right).
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer after 10s", what)
		panic("unreachable")
	}
}

type getResult struct {
	v     string
	found bool
	err   error
}

func goGet(c *cache.Cache, ctx context.Context, key string) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		v, found, err := c.Get(ctx, key)
		ch <- getResult{string(v), found, err}
	}()
	return ch
}

// A load whose goroutine exits (runtime.Goexit, as t.FailNow does) still
// ends its flight: its waiters get an error, and later Gets load again
// instead of waiting forever.
func TestLoaderGoexitEndsItsFlight(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	var loads atomic.Int64
	entered, exit := make(chan struct{}), make(chan struct{})
	c, _ := cache.New(cache.Config{Name: "c", Backend: b,
		Load: func(context.Context, string) ([]byte, bool, error) {
			if loads.Add(1) == 1 {
				close(entered)
				<-exit
				runtime.Goexit()
			}
			return []byte("v"), true, nil
		}})
	go c.Get(context.Background(), "k") //nolint:errcheck // its goroutine exits
	<-entered
	follower := goGet(c, context.Background(), "k")
	for c.Stats().Misses < 2 { // the follower has joined the flight
		runtime.Gosched()
	}
	close(exit)
	if got := wait(t, follower, "a Get that joined a load whose goroutine exited"); !errors.Is(got.err, cache.ErrLoadExited) {
		t.Errorf("joined a load that exited: got %+v, want ErrLoadExited", got)
	}
	if got := wait(t, goGet(c, context.Background(), "k"), "Get after a load whose goroutine exited"); got.v != "v" || got.err != nil {
		t.Errorf("Get after the exited load: got %+v, want v", got)
	}
}
