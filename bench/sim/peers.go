package sim

import (
	"github.com/Yiling-J/theine-go"
	"github.com/dgraph-io/ristretto/v2"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jellydator/ttlcache/v3"
	"github.com/maypok86/otter/v2"
)

// Peers are the other Go caches, driven the same way: Get, and on a miss
// Set. Notes on fairness and determinism:
//
//   - otter v2 buffers writes and runs maintenance (eviction) on its
//     Executor, by default a new goroutine, so the cache overshoots
//     MaximumSize nondeterministically; we pass a synchronous Executor so
//     that each Set evicts before it returns.
//   - theine buffers writes and applies them on a goroutine; we call Wait
//     after every Set so each insert (and its eviction) is applied before
//     the next access. Its read buffer is still lossy, as in production.
//   - ristretto buffers sets (and may drop them under contention); we call
//     Wait after every Set. Its Get counters are batched, as in production.
//     Config is ristretto's recommendation: NumCounters = 10×capacity,
//     MaxCost = capacity with cost 1 and IgnoreInternalCost.
//   - golang-lru's LRU and 2Q are synchronous. Its ARC lives in a separate
//     module (golang-lru/arc/v2) that bench does not require; left out.
//   - ttlcache v3 with WithCapacity evicts from the back of its expiration
//     queue, which with NoTTL items and touch-on-hit is LRU order.
//
// Not simulated: go-cache (no capacity at all: it never evicts), freecache
// and bigcache (their caps are in bytes over 256 / N ring-buffer segments
// with per-segment FIFO-like overwriting, so no setting gives "N entries";
// any byte cap would favour or penalise them arbitrarily).
func Peers() []Contender {
	return []Contender{
		{Name: "otter", New: newOtter},
		{Name: "theine", New: newTheine},
		{Name: "ristretto", New: newRistretto},
		{Name: "golang-lru", New: newGolangLRU},
		{Name: "golang-lru 2Q", New: newGolang2Q},
		{Name: "ttlcache", New: newTTLCache},
	}
}

type funcCache struct {
	access func(uint64) bool
	close  func()
}

func (f funcCache) Access(k uint64) bool { return f.access(k) }
func (f funcCache) Close() {
	if f.close != nil {
		f.close()
	}
}

func newOtter(n int) Cache {
	c := otter.Must(&otter.Options[uint64, struct{}]{
		MaximumSize: max(n, 1),
		// otter's default executor runs maintenance (and so eviction) on a
		// new goroutine: the cache then holds more than MaximumSize entries
		// for a while, at a rate that depends on the scheduler. Running it on
		// the calling goroutine makes every write apply its eviction before
		// returning, as in the other contenders, and the run deterministic.
		Executor: func(fn func()) { fn() },
	})
	return funcCache{access: func(k uint64) bool {
		if _, ok := c.GetIfPresent(k); ok {
			return true
		}
		c.Set(k, struct{}{})
		return false
	}, close: func() { c.InvalidateAll() }}
}

func newTheine(n int) Cache {
	c, err := theine.NewBuilder[uint64, struct{}](int64(n)).Build()
	if err != nil {
		panic(err)
	}
	return funcCache{access: func(k uint64) bool {
		if _, ok := c.Get(k); ok {
			return true
		}
		c.Set(k, struct{}{}, 1)
		c.Wait()
		return false
	}, close: c.Close}
}

func newRistretto(n int) Cache {
	c, err := ristretto.NewCache(&ristretto.Config[uint64, struct{}]{
		NumCounters:        int64(10 * n),
		MaxCost:            int64(n),
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		panic(err)
	}
	return funcCache{access: func(k uint64) bool {
		if _, ok := c.Get(k); ok {
			return true
		}
		c.Set(k, struct{}{}, 1)
		c.Wait()
		return false
	}, close: c.Close}
}

func newGolangLRU(n int) Cache {
	c, err := lru.New[uint64, struct{}](n)
	if err != nil {
		panic(err)
	}
	return funcCache{access: func(k uint64) bool {
		if _, ok := c.Get(k); ok {
			return true
		}
		c.Add(k, struct{}{})
		return false
	}}
}

func newGolang2Q(n int) Cache {
	c, err := lru.New2Q[uint64, struct{}](n)
	if err != nil {
		panic(err)
	}
	return funcCache{access: func(k uint64) bool {
		if _, ok := c.Get(k); ok {
			return true
		}
		c.Add(k, struct{}{})
		return false
	}}
}

func newTTLCache(n int) Cache {
	c := ttlcache.New[uint64, struct{}](ttlcache.WithCapacity[uint64, struct{}](uint64(n)))
	return funcCache{access: func(k uint64) bool {
		if c.Get(k) != nil {
			return true
		}
		c.Set(k, struct{}{}, ttlcache.NoTTL)
		return false
	}}
}
