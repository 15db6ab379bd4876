// Package cache is a read-through cache over a store.Backend with the three
// protections the incident reviews keep asking for:
//
//   - TTL jitter: every entry's TTL is spread ±Jitter (10% by default)
//     around Config.TTL, so entries written together do not all expire
//     together and stampede the origin at once.
//   - Negative caching: a miss at the origin is remembered for a short
//     NegativeTTL, so a flood of requests for a key that does not exist
//     does not reach the origin every time.
//   - Single flight: concurrent misses for one key in one process share one
//     load (Group), so a stampede on a missing key loads it once. Only
//     callers that found the same entry share a load: one that found an
//     Invalidate's marker (from any process) never joins a load begun
//     before it.
//
// # TTL kind
//
// Absolute with jitter; reads do not extend it.
//
// # Eviction
//
// Entries are not pinned: an evicted entry is a miss and is loaded again.
//
// # Getting a Backend
//
// A Cache runs on any store.Backend. In one process, wrap a tide engine
// with package store/embedded:
//
//	e, err := engine.New(engine.Config{})
//	b, err := embedded.New(embedded.Config{Engine: e})
//	c, err := cache.New(cache.Config{Name: "products", Backend: b, Load: load})
//
// Shared by several processes, use Redis or Valkey through the redisstore
// module (github.com/tidekv/tide/usecases/redisstore):
//
//	b, err := redisstore.New(redisstore.Config{Client: rdb})
//
// # Loaders
//
// Config.Load is the cache's loader, used by Get; GetWith takes a loader
// per call (a closure over the request's data), and GetMany a bulk loader
// that fetches all of a call's missing keys in one origin round trip.
// Concurrent callers of one key share one load whatever their loaders:
// the first caller's runs.
//
// # Refresh ahead (stale-while-revalidate)
//
// With Config.RefreshAfter set, an entry older than RefreshAfter is still
// served, and one background load refreshes it; the entry is stale but
// usable until its TTL, so a hot key never makes a caller wait for the
// origin, and the window in which a stale value may be served is TTL −
// RefreshAfter. Both scale with the entry's jittered TTL: an entry written
// for 0.9·TTL is refreshed after 0.9·RefreshAfter, so that every entry is
// refreshed ahead, even one whose TTL was jittered below RefreshAfter. Background refreshes run on goroutines the Cache owns: at
// most Config.MaxRefreshes at a time (a refresh that finds no free slot is
// skipped, and the next Get of the key tries again), one per key; Close
// cancels their contexts and waits for them. A refresh that fails leaves
// the stale entry in place and is reported. A refresh is fenced like any
// load: an Invalidate while it runs wins.
//
// # Stats
//
// Stats returns the cache's counters (hits, misses, loads, load errors,
// refreshes); Events reports them by name, which makes a Cache an
// EventSource for contrib/prometheus and expvarstats.
//
// # Store failure
//
// The cache is an optimisation: if the store fails on read, Get loads from
// the origin (still single-flighted) and returns the loaded value; failed
// cache writes are ignored. Config.Logger and Config.OnError hear about
// both, and about failed background refreshes; a foreground load's error
// is returned to the caller.
package cache

import (
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/usecases/internal/keys"
	"github.com/tidekv/tide/usecases/store"
)

// Loader loads key from the origin. found = false is a miss (cached
// negatively); an error is not cached. A loader that asks the cache for
// the key it is loading, with the context it was given, gets
// ErrReentrantLoad (it would wait for itself).
type Loader func(ctx context.Context, key string) (value []byte, found bool, err error)

// BulkLoader loads keys from the origin in one call and returns the values
// it found; a key absent from the map is a miss (cached negatively). An
// error is not cached.
type BulkLoader func(ctx context.Context, keys []string) (map[string][]byte, error)

// Backend is what a Cache needs of a store. store.Backend implementations
// (embedded, redisstore) satisfy it.
type Backend interface {
	Get(ctx context.Context, key string) (store.Item, bool, error)
	Set(ctx context.Context, key string, value []byte, o store.SetOptions) (uint64, bool, error)
}

// Config configures a Cache. Zero fields mean defaults.
type Config struct {
	// Backend holds the entries. Required.
	Backend Backend
	// Load loads a missing key for Get and GetMany. nil means Get
	// reports ErrNoLoader: every call brings its own (GetWith).
	Load Loader
	// TTL is the mean lifetime of an entry. 0 means 5 minutes. With its
	// jitter it must not exceed MaxTTL.
	TTL time.Duration
	// Jitter is the relative spread of TTLs, in [0, 1). 0 means 0.1 (±10%).
	Jitter float64
	// NoJitter disables jitter (every entry lives exactly TTL).
	NoJitter bool
	// NegativeTTL is how long a miss is remembered. 0 means 10 seconds. At
	// most MaxTTL.
	NegativeTTL time.Duration
	// NoNegative disables negative caching.
	NoNegative bool
	// RefreshAfter, if positive, is the age after which an entry is
	// refreshed in the background while it is still served (see the
	// package doc), scaled by the entry's jitter. 0 means no refresh ahead: an entry lives TTL, then
	// the next Get loads it. It must be less than TTL.
	RefreshAfter time.Duration
	// MaxRefreshes bounds the background refreshes running at once. 0
	// means 16.
	MaxRefreshes int
	// Name names the cache ("users", "products"). Required: 1 to 64 bytes
	// of letters, digits, '.', '_' and '-'. It is part of every store key,
	// so that two caches on one backend never return each other's values.
	Name string
	// Prefix is prepended to every key. "" means "tide:cache:". Every
	// adapter checks its Prefix by one rule, and New refuses a Prefix
	// that breaks it with ErrInvalidConfig: 1 to 128 bytes of printable
	// ASCII without space; no '{' (a caller's key may carry a Redis
	// Cluster hash tag); and no overlap with another adapter's default key
	// space ("tide:sess:", "tide:flag:", "tide:rl:", "tide:idem:",
	// "tide:lease:") or the Redis backend's "tide:ver:": the Prefix is
	// neither a prefix of one nor begins with one ("tide:" is refused: a
	// caller's key could then name another adapter's key). Adapters
	// sharing a backend need prefixes neither of which is a prefix of the
	// other.
	Prefix string
	// Logger, if set, logs store errors the cache worked around and failed
	// background refreshes, with the key and the cause.
	Logger *slog.Logger
	// OnError, if set, hears about the same failures as Logger. It must
	// be safe for concurrent use.
	OnError func(key string, err error)
}

// Cache is a read-through cache. Create it with New; its zero value is not
// usable. It is safe for concurrent use. A hit costs one store read; a miss
// two reads (the second inside the single flight, so a late caller finds
// the value a flight that just ended stored), one load (shared by
// concurrent callers) and one write. With RefreshAfter it owns background
// goroutines: call Close when done with it.
type Cache struct {
	cfg   Config
	group Group

	// closing is cancelled by Close; background refreshes stop with it.
	closing   context.Context
	close     context.CancelFunc
	closeOnce sync.Once
	bg        sync.WaitGroup // running background refreshes

	mu sync.Mutex
	// refreshing holds the keys with a background refresh running; its
	// size is bounded by MaxRefreshes. Guarded by mu.
	refreshing map[string]struct{}
	// closed is set by Close; no refresh starts after it. Guarded by mu.
	closed bool

	hits, misses, loads, loadErrors, refreshes atomic.Uint64
}

// MaxTTL is the longest TTL (jitter included) and NegativeTTL a Cache
// accepts: one every backend can store (the engine's deadlines are int64
// nanoseconds since 1970, which end in 2262).
const MaxTTL = store.MaxTTL

const defaultPrefix = keys.CachePrefix

// New returns a Cache for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Cache, error) {
	switch {
	case cfg.Backend == nil:
		return nil, fmt.Errorf("%w: Backend is nil", ErrInvalidConfig)
	case !keys.ValidName(cfg.Name):
		return nil, fmt.Errorf("%w: Name = %q, want 1 to 64 bytes of [A-Za-z0-9._-]", ErrInvalidConfig, cfg.Name)
	case cfg.TTL < 0 || cfg.NegativeTTL < 0 || cfg.TTL > MaxTTL || cfg.NegativeTTL > MaxTTL:
		return nil, fmt.Errorf("%w: TTL = %v, NegativeTTL = %v, want 0..%v", ErrInvalidConfig, cfg.TTL, cfg.NegativeTTL, MaxTTL)
	case !(cfg.Jitter >= 0 && cfg.Jitter < 1):
		return nil, fmt.Errorf("%w: Jitter = %v, want 0 ≤ Jitter < 1", ErrInvalidConfig, cfg.Jitter)
	case cfg.RefreshAfter < 0 || cfg.MaxRefreshes < 0:
		return nil, fmt.Errorf("%w: RefreshAfter = %v, MaxRefreshes = %d, want ≥ 0", ErrInvalidConfig, cfg.RefreshAfter, cfg.MaxRefreshes)
	}
	if cfg.TTL == 0 {
		cfg.TTL = 5 * time.Minute
	}
	if cfg.RefreshAfter >= cfg.TTL {
		return nil, fmt.Errorf("%w: RefreshAfter %v ≥ TTL %v (it would never refresh)", ErrInvalidConfig, cfg.RefreshAfter, cfg.TTL)
	}
	if cfg.MaxRefreshes == 0 {
		cfg.MaxRefreshes = 16
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = 0.1
	}
	if cfg.NoJitter {
		cfg.Jitter = 0
	}
	if cfg.NegativeTTL == 0 {
		cfg.NegativeTTL = 10 * time.Second
	}
	if cfg.Prefix == "" {
		cfg.Prefix = defaultPrefix
	}
	if err := keys.CheckPrefix(cfg.Prefix, defaultPrefix); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if hi := float64(cfg.TTL) * (1 + cfg.Jitter); hi > float64(MaxTTL) {
		return nil, fmt.Errorf("%w: TTL %v with jitter %v reaches %v, over MaxTTL", ErrInvalidConfig, cfg.TTL, cfg.Jitter, time.Duration(hi))
	}
	c := &Cache{cfg: cfg, refreshing: map[string]struct{}{}}
	c.closing, c.close = context.WithCancel(context.Background())
	return c, nil
}

// Close stops background refreshes: it cancels their contexts and waits
// for them to return (a loader that ignores its context delays Close). No
// refresh starts after it; Get and the rest keep working, serving aged
// entries until their TTL. Close is idempotent and safe to call
// concurrently.
func (c *Cache) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.close()
	})
	c.bg.Wait()
	return nil
}

// Jitter returns ttl spread uniformly over [ttl·(1−frac), ttl·(1+frac)],
// never below 1 ns nor above the largest Duration. frac outside [0, 1) is
// clamped.
func Jitter(ttl time.Duration, frac float64) time.Duration {
	if ttl <= 0 || !(frac > 0) {
		return ttl
	}
	frac = min(frac, 0.999)
	spread := float64(ttl) * frac
	d := float64(ttl) - spread + rand.Float64()*2*spread
	if d >= float64(math.MaxInt64) { // 2^63: the conversion would overflow
		return math.MaxInt64
	}
	return max(time.Duration(d), 1)
}

// Stored entries: a tag byte, then for tagTimed the TTL the entry was
// written with (8 bytes, big-endian nanoseconds, so that its age is that
// minus the TTL left) and the value, for tagValue the value.
const (
	tagTimed    = 'w' // a cached value with its TTL
	tagValue    = 'v' // a cached value (no age: never refreshed ahead)
	tagNegative = 'n' // a cached miss
	tagStale    = 'i' // invalidated: a miss whose version fences out loads begun before it
)

// Stats are a Cache's cumulative counters.
type Stats struct {
	// Hits counts keys answered from the cache (an aged entry served while
	// it refreshes included, and a remembered miss).
	Hits uint64
	// Misses counts keys the cache did not hold (each then joined or ran a
	// load).
	Misses uint64
	// Loads counts origin calls, foreground and background; a BulkLoader
	// call counts once.
	Loads uint64
	// LoadErrors counts origin calls that failed: returned an error,
	// panicked, or never returned (runtime.Goexit).
	LoadErrors uint64
	// Refreshes counts background refreshes started.
	Refreshes uint64
}

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Loads: c.loads.Load(),
		LoadErrors: c.loadErrors.Load(), Refreshes: c.refreshes.Load()}
}

// Events reports Stats by name: "hit", "miss", "load", "load_error" and
// "refresh". It makes a Cache an EventSource for contrib/prometheus and
// expvarstats.
func (c *Cache) Events() iter.Seq2[string, uint64] {
	return func(yield func(string, uint64) bool) {
		st := c.Stats()
		_ = yield("hit", st.Hits) && yield("miss", st.Misses) && yield("load", st.Loads) &&
			yield("load_error", st.LoadErrors) && yield("refresh", st.Refreshes)
	}
}

func (c *Cache) report(ctx context.Context, key, msg string, err error) {
	if l := c.cfg.Logger; l != nil {
		l.LogAttrs(ctx, slog.LevelWarn, msg, slog.String("cache", c.cfg.Name), slog.String("key", key), slog.Any("err", err))
	}
	if c.cfg.OnError != nil {
		c.cfg.OnError(key, err)
	}
}

// storeKey is Prefix + Name + ":" + the key, or its SHA-256 if it is longer
// than 256 bytes (an oversized key is still cached instead of failing in
// the store and reaching the origin every time); the two forms are marked
// so that they never alias.
func (c *Cache) storeKey(key string) string {
	return c.cfg.Prefix + c.cfg.Name + ":" + keys.Caller(key)
}

// entry is a decoded stored entry.
type entry struct {
	value []byte
	found bool
	// hit is false for an invalidated or unreadable entry (load it).
	hit bool
	// aged reports a value due for a refresh (see Cache.aged).
	aged bool
}

func (c *Cache) decode(it store.Item) entry {
	v := it.Value
	if len(v) == 0 {
		return entry{}
	}
	switch v[0] {
	case tagTimed:
		if len(v) < 9 {
			return entry{}
		}
		full := time.Duration(binary.BigEndian.Uint64(v[1:9]))
		return entry{value: v[9:], found: true, hit: true, aged: c.aged(full, it.TTL)}
	case tagValue:
		return entry{value: v[1:], found: true, hit: true}
	case tagNegative:
		return entry{hit: true}
	}
	return entry{}
}

// aged reports whether an entry written with TTL full, left is left, is
// due for a refresh: it has lived RefreshAfter/TTL of full. Scaled, so
// that an entry whose TTL was jittered below RefreshAfter is refreshed
// too (at RefreshAfter exactly when full is TTL): age·TTL ≥
// RefreshAfter·full, in 128 bits (the products reach 2^123).
func (c *Cache) aged(full, left time.Duration) bool {
	if c.cfg.RefreshAfter <= 0 || left == store.NoTTL || full <= 0 || left > full {
		return false
	}
	ah, al := bits.Mul64(uint64(full-left), uint64(c.cfg.TTL))
	rh, rl := bits.Mul64(uint64(c.cfg.RefreshAfter), uint64(full))
	return ah > rh || ah == rh && al >= rl
}

func encodeValue(v []byte, ttl time.Duration) []byte {
	enc := make([]byte, 9, 9+len(v))
	enc[0] = tagTimed
	binary.BigEndian.PutUint64(enc[1:9], uint64(ttl))
	return append(enc, v...)
}

// Get returns key's value from the cache, loading it with Config.Load on a
// miss (ErrNoLoader if there is none). found is false if the origin has no
// such key (then or within NegativeTTL). The value is the caller's own,
// even when the load was shared: modifying it changes nobody else's.
//
// The loaded value is stored only if the entry did not change since the
// load began (a version-checked write), so a load that an Invalidate
// overtook never lands.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if c.cfg.Load == nil {
		return nil, false, ErrNoLoader
	}
	return c.GetWith(ctx, key, c.cfg.Load)
}

// GetWith is Get with load as the loader for this call (Config.Load is not
// used). A caller that joins a load already running for key gets that
// load's result, whatever its loader.
//
// A caller whose ctx ends while the load runs returns ctx.Err() at once,
// the caller that started the load included. The load goes on for the
// callers still waiting (with the first caller's context values, not its
// cancellation); once none waits, its context is cancelled (a result it
// returns anyway is still stored).
func (c *Cache) GetWith(ctx context.Context, key string, load Loader) ([]byte, bool, error) {
	if load == nil {
		return nil, false, ErrNoLoader
	}
	sk := c.storeKey(key)
	it, ok, err := c.cfg.Backend.Get(ctx, sk)
	if err != nil {
		if ctx.Err() != nil { // the caller gave up: not a store failure
			return nil, false, ctx.Err()
		}
		c.report(ctx, key, "tide: cache store read failed", err)
	} else if ok {
		if e := c.decode(it); e.hit {
			c.hits.Add(1)
			if e.aged {
				c.refresh(ctx, key, it.Version, load)
			}
			return e.value, e.found, nil
		}
	}
	c.misses.Add(1)
	storeUp := err == nil
	r, err := c.group.Do(ctx, flightKey(key, it.Version, storeUp), func(ctx context.Context) (Result, error) {
		return c.fill(ctx, key, load, storeUp, false)
	})
	if err != nil {
		return nil, false, err
	}
	return r.Value, r.Found, nil
}

// flightKey is the Group key of a load of key by a caller that found the
// entry at version v (0: absent): callers share a load only if they saw
// the same entry. A caller that saw a newer entry (an Invalidate's marker,
// written by any process sharing the backend) therefore never joins a load
// begun before it. Versions are digits after the last NUL, so no two
// (key, version) pairs give one flight key.
func flightKey(key string, v uint64, storeUp bool) string {
	if !storeUp {
		return key + "\x00?"
	}
	return key + "\x00" + strconv.FormatUint(v, 10)
}

// fill loads key and stores the result, inside the key's flight. It reads
// the entry again first: a caller whose miss raced with the end of another
// flight finds that flight's value instead of loading again, and the
// entry's version fences the write. A refresh (refresh = true) loads an
// aged entry instead of returning it.
func (c *Cache) fill(ctx context.Context, key string, load Loader, storeUp, refresh bool) (Result, error) {
	sk := c.storeKey(key)
	o := store.SetOptions{IfAbsent: true}
	if storeUp {
		it, ok, err := c.cfg.Backend.Get(ctx, sk)
		switch {
		case err != nil:
			if ctx.Err() != nil { // every caller gave up: not a store failure
				return Result{}, ctx.Err()
			}
			storeUp = false
			c.report(ctx, key, "tide: cache store read failed", err)
		case ok:
			if e := c.decode(it); e.hit && !(refresh && e.aged) {
				return Result{Value: e.value, Found: e.found}, nil
			}
			o = store.SetOptions{IfVersion: it.Version}
		}
	}
	c.loads.Add(1)
	v, found, err := c.callLoad(ctx, key, load)
	if err != nil {
		return Result{}, err
	}
	if storeUp {
		// Stored even if every caller gave up meanwhile (the Group then
		// cancelled ctx): the origin answered, and the write is fenced.
		c.store(context.WithoutCancel(ctx), key, v, found, o)
	}
	return Result{Value: v, Found: found}, nil
}

// callLoad calls load and counts a failure: an error, or a panic (which it
// lets through, for the Group to report).
func (c *Cache) callLoad(ctx context.Context, key string, load Loader) (v []byte, found bool, err error) {
	failed := true
	defer func() {
		if failed {
			c.loadErrors.Add(1)
		}
	}()
	v, found, err = load(ctx, key)
	failed = err != nil
	return v, found, err
}

// callBulkLoad is callLoad for a BulkLoader.
func (c *Cache) callBulkLoad(ctx context.Context, keys []string, load BulkLoader) (got map[string][]byte, err error) {
	failed := true
	defer func() {
		if failed {
			c.loadErrors.Add(1)
		}
	}()
	got, err = load(ctx, keys)
	failed = err != nil
	return got, err
}

// store writes a loaded result under o's condition. A lost condition means
// the entry changed meanwhile (an Invalidate, or another process's load):
// leave it.
func (c *Cache) store(ctx context.Context, key string, v []byte, found bool, o store.SetOptions) {
	if !found && c.cfg.NoNegative {
		return
	}
	enc := []byte{tagNegative}
	o.TTL = c.cfg.NegativeTTL
	if found {
		o.TTL = Jitter(c.cfg.TTL, c.cfg.Jitter)
		enc = encodeValue(v, o.TTL)
	}
	if _, _, err := c.cfg.Backend.Set(ctx, c.storeKey(key), enc, o); err != nil {
		c.report(ctx, key, "tide: cache store write failed", err)
	}
}

// refresh starts a background refresh of key with load, unless one is
// running for key, MaxRefreshes are running, or the cache is closed.
func (c *Cache) refresh(ctx context.Context, key string, version uint64, load Loader) {
	c.mu.Lock()
	_, running := c.refreshing[key]
	if running || c.closed || len(c.refreshing) >= c.cfg.MaxRefreshes {
		c.mu.Unlock()
		return
	}
	c.refreshing[key] = struct{}{}
	c.bg.Add(1)
	c.mu.Unlock()
	c.refreshes.Add(1)
	// The caller's values (trace IDs) but not its cancellation: it has its
	// answer and may be gone. Close cancels.
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(c.closing, cancel)
	go func() {
		defer c.bg.Done()
		defer func() {
			c.mu.Lock()
			delete(c.refreshing, key)
			c.mu.Unlock()
		}()
		defer stop()
		defer cancel()
		// The Group runs fill on this goroutine, without bctx's
		// cancellation, so that Close waits for it (no write after Close);
		// Close must still reach the loader (a load that returns anyway is
		// still stored).
		closable := func(ctx context.Context, key string) ([]byte, bool, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(c.closing, cancel)()
			return load(ctx, key)
		}
		_, err := c.group.Do(context.WithoutCancel(bctx), flightKey(key, version, true), func(ctx context.Context) (Result, error) {
			return c.fill(ctx, key, closable, true, true)
		})
		if err != nil {
			c.report(bctx, key, "tide: cache refresh failed", err)
		}
	}()
}

// GetMany returns the values of keys, from the cache where it holds them;
// the others are loaded in one call of load (nil: Config.Load, key by key,
// single-flighted) and stored. A key the origin does not have is absent
// from the result. An error from load is returned with nothing stored for
// the keys it was to load. Cost: one store read per key (two for a
// missing one), one load call, one write per loaded key. Bulk loads are
// not single-flighted with each other: concurrent GetMany calls may load
// the same missing key twice (the version-checked writes keep the cache
// consistent, as for Get). An aged entry is refreshed in the background
// with Config.Load, if set.
func (c *Cache) GetMany(ctx context.Context, keys []string, load BulkLoader) (map[string][]byte, error) {
	out := make(map[string][]byte, len(keys))
	if load == nil {
		if c.cfg.Load == nil {
			return nil, ErrNoLoader
		}
		for _, k := range keys {
			if _, done := out[k]; done {
				continue
			}
			v, found, err := c.Get(ctx, k)
			if err != nil {
				return nil, err
			}
			if found {
				out[k] = v
			}
		}
		return out, nil
	}
	type pending struct {
		o       store.SetOptions
		storeUp bool
	}
	missing := map[string]pending{}
	var order []string
	for _, k := range keys {
		if _, done := out[k]; done {
			continue
		}
		if _, dup := missing[k]; dup {
			continue
		}
		it, ok, err := c.cfg.Backend.Get(ctx, c.storeKey(k))
		p := pending{o: store.SetOptions{IfAbsent: true}, storeUp: err == nil}
		switch {
		case err != nil:
			if ctx.Err() != nil { // the caller gave up: not a store failure
				return nil, ctx.Err()
			}
			c.report(ctx, k, "tide: cache store read failed", err)
		case ok:
			if e := c.decode(it); e.hit {
				c.hits.Add(1)
				if e.found {
					out[k] = e.value
				}
				if e.aged && c.cfg.Load != nil {
					c.refresh(ctx, k, it.Version, c.cfg.Load)
				}
				continue
			}
			p.o = store.SetOptions{IfVersion: it.Version}
		}
		c.misses.Add(1)
		missing[k] = p
		order = append(order, k)
	}
	if len(order) == 0 {
		return out, nil
	}
	if err := ctx.Err(); err != nil { // nobody wants the load
		return nil, err
	}
	c.loads.Add(1)
	got, err := c.callBulkLoad(ctx, order, load)
	if err != nil {
		return nil, err
	}
	for _, k := range order {
		v, found := got[k]
		if found {
			out[k] = v
		}
		if p := missing[k]; p.storeUp {
			// Not failed by the caller's cancellation: the origin answered.
			c.store(context.WithoutCancel(ctx), k, v, found, p.o)
		}
	}
	return out, nil
}

// Invalidate removes key from the cache: the next Get loads it, even if a
// load (or background refresh) that began before Invalidate is still
// running (its result is neither stored nor shared with later callers). It
// leaves a marker that lives TTL, so a load that outlasts the TTL itself
// may still land.
func (c *Cache) Invalidate(ctx context.Context, key string) error {
	// The marker's new version also keeps later Gets, in any process, from
	// joining a load begun before it (see flightKey).
	_, _, err := c.cfg.Backend.Set(ctx, c.storeKey(key), []byte{tagStale}, store.SetOptions{TTL: max(c.cfg.TTL, c.cfg.NegativeTTL)})
	return err
}
