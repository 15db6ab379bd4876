package storetest

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/cache"
)

// RunCache runs package cache's contract suite on a backend.
func RunCache(t *testing.T, newFixture NewFunc) {
	newFixture = instrument(newFixture)
	ctx := context.Background()
	t.Run("ReadThroughAndNegative", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		u := f.unit()
		var loads atomic.Int64
		origin := map[string]string{"a": "apple"}
		c, err := cache.New(cache.Config{Name: "test", Backend: f.Backend, TTL: 100 * u, NegativeTTL: 5 * u, Load: func(_ context.Context, k string) ([]byte, bool, error) {
			loads.Add(1)
			v, ok := origin[k]
			return []byte(v), ok, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			advance time.Duration
			key     string
			found   bool
			value   string
			loads   int64
		}{
			{0, "a", true, "apple", 1},
			{0, "a", true, "apple", 1}, // hit
			{0, "z", false, "", 2},
			{0, "z", false, "", 2},             // negative hit
			{3 * u, "z", false, "", 2},         // still negative
			{2*u + f.Slack, "z", false, "", 3}, // negative entry expired: loaded again
			{0, "a", true, "apple", 3},
		}
		for i, s := range steps {
			if s.advance > 0 {
				f.Advance(s.advance)
			}
			v, found, err := c.Get(ctx, s.key)
			if err != nil || found != s.found || string(v) != s.value || loads.Load() != s.loads {
				t.Errorf("step %d Get(%q): got (%q, %v, %v) after %d loads, want (%q, %v, nil) after %d", i, s.key, v, found, err, loads.Load(), s.value, s.found, s.loads)
			}
		}
		c.Invalidate(ctx, "a")
		c.Get(ctx, "a")
		if loads.Load() != 4 {
			t.Errorf("Get after Invalidate: %d loads, want 4", loads.Load())
		}
	})
	t.Run("JitteredTTL", func(t *testing.T) {
		f := newFixture(t)
		c, _ := cache.New(cache.Config{Name: "test", Backend: f.Backend, TTL: 1000 * f.unit(), Load: func(context.Context, string) ([]byte, bool, error) {
			return []byte("v"), true, nil
		}})
		ttls := map[time.Duration]bool{}
		for i := range 50 {
			k := string(rune('a' + i))
			c.Get(ctx, k)
			it, ok, _ := f.Backend.Get(ctx, "tide:cache:test:k:"+k)
			if !ok {
				t.Fatal("entry not cached")
			}
			if it.TTL < 900*f.unit()-f.Slack || it.TTL > 1100*f.unit()+f.Slack {
				t.Fatalf("TTL %v outside ±10%% of %v", it.TTL, 1000*f.unit())
			}
			ttls[it.TTL] = true
		}
		if len(ttls) < 25 {
			t.Fatalf("only %d distinct TTLs among 50 entries: not jittered", len(ttls))
		}
	})
	t.Run("StampedeLoadsOnce", func(t *testing.T) {
		f := newFixture(t)
		var loads atomic.Int64
		release := make(chan struct{})
		c, _ := cache.New(cache.Config{Name: "test", Backend: f.Backend, Load: func(context.Context, string) ([]byte, bool, error) {
			loads.Add(1)
			<-release
			return []byte("hot"), true, nil
		}})
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, ok, err := c.Get(ctx, "hot-key")
				if string(v) != "hot" || !ok || err != nil {
					t.Errorf("Get: got (%q, %v, %v), want hot", v, ok, err)
				}
			}()
		}
		// Hold the load until every caller has missed: all 100 are then
		// concurrent misses (each joins the flight, or finds its value).
		for c.Stats().Misses < 100 {
			runtime.Gosched()
		}
		close(release)
		wg.Wait()
		if got := loads.Load(); got != 1 {
			t.Fatalf("100 concurrent misses loaded %d times, want 1", got)
		}
	})
	t.Run("LoadErrorNotCached", func(t *testing.T) {
		f := newFixture(t)
		boom := errors.New("origin down")
		fail := true
		c, _ := cache.New(cache.Config{Name: "test", Backend: f.Backend, Load: func(context.Context, string) ([]byte, bool, error) {
			if fail {
				return nil, false, boom
			}
			return []byte("ok"), true, nil
		}})
		if _, _, err := c.Get(ctx, "k"); !errors.Is(err, boom) {
			t.Fatalf("Get with a failing origin: got %v, want %v", err, boom)
		}
		fail = false
		if v, ok, err := c.Get(ctx, "k"); string(v) != "ok" || !ok || err != nil {
			t.Fatalf("Get after the origin recovered: got (%q, %v, %v), want ok", v, ok, err)
		}
	})
	runCacheInvalidation(t, newFixture)
	runCacheRefresh(t, newFixture)
}
