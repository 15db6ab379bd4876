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
//     load (Group), so a stampede on a missing key loads it once.
//
// # TTL kind
//
// Absolute with jitter; reads do not extend it.
//
// # Eviction
//
// Entries are not pinned: an evicted entry is a miss and is loaded again.
//
// # Store failure
//
// The cache is an optimisation: if the store fails on read, Get loads from
// the origin (still single-flighted) and returns the loaded value; failed
// cache writes are ignored. Config.OnError hears about both.
package cache

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tidekv/tide/usecases/internal/keys"
	"github.com/tidekv/tide/usecases/store"
)

// Loader loads key from the origin. found = false is a miss (cached
// negatively); an error is not cached.
type Loader func(ctx context.Context, key string) (value []byte, found bool, err error)

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
	// Load loads a missing key. Required.
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
	// Name names the cache ("users", "products"). Required: 1 to 64 bytes
	// of letters, digits, '.', '_' and '-'. It is part of every store key,
	// so that two caches on one backend never return each other's values.
	Name string
	// Prefix is prepended to every key. "" means "tide:cache:".
	Prefix string
	// OnError, if set, hears about store errors the cache worked around.
	OnError func(key string, err error)
}

// Cache is a read-through cache. Create it with New; its zero value is not
// usable. It is safe for concurrent use. A hit costs one store read; a miss
// two reads (the second inside the single flight, so a late caller finds
// the value a flight that just ended stored), one load (shared by
// concurrent callers) and one write.
type Cache struct {
	cfg   Config
	group Group
}

// MaxTTL is the longest TTL (jitter included) and NegativeTTL a Cache
// accepts: one every backend can store (the engine's deadlines are int64
// nanoseconds since 1970, which end in 2262).
const MaxTTL = store.MaxTTL

// New returns a Cache for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Cache, error) {
	switch {
	case cfg.Backend == nil:
		return nil, fmt.Errorf("%w: Backend is nil", ErrInvalidConfig)
	case cfg.Load == nil:
		return nil, fmt.Errorf("%w: Load is nil", ErrInvalidConfig)
	case !keys.ValidName(cfg.Name):
		return nil, fmt.Errorf("%w: Name = %q, want 1 to 64 bytes of [A-Za-z0-9._-]", ErrInvalidConfig, cfg.Name)
	case cfg.TTL < 0 || cfg.NegativeTTL < 0 || cfg.TTL > MaxTTL || cfg.NegativeTTL > MaxTTL:
		return nil, fmt.Errorf("%w: TTL = %v, NegativeTTL = %v, want 0..%v", ErrInvalidConfig, cfg.TTL, cfg.NegativeTTL, MaxTTL)
	case !(cfg.Jitter >= 0 && cfg.Jitter < 1):
		return nil, fmt.Errorf("%w: Jitter = %v, want 0 ≤ Jitter < 1", ErrInvalidConfig, cfg.Jitter)
	}
	if cfg.TTL == 0 {
		cfg.TTL = 5 * time.Minute
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
		cfg.Prefix = "tide:cache:"
	}
	if hi := float64(cfg.TTL) * (1 + cfg.Jitter); hi > float64(MaxTTL) {
		return nil, fmt.Errorf("%w: TTL %v with jitter %v reaches %v, over MaxTTL", ErrInvalidConfig, cfg.TTL, cfg.Jitter, time.Duration(hi))
	}
	return &Cache{cfg: cfg}, nil
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

// Stored entries: a tag byte, then the value for tagValue.
const (
	tagValue    = 'v' // a cached value
	tagNegative = 'n' // a cached miss
	tagStale    = 'i' // invalidated: a miss whose version fences out loads begun before it
)

func (c *Cache) report(key string, err error) {
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

// decode reports what a stored entry says: hit = false for an invalidated
// or unreadable entry (load it).
func decode(v []byte) (value []byte, found, hit bool) {
	if len(v) > 0 {
		switch v[0] {
		case tagValue:
			return v[1:], true, true
		case tagNegative:
			return nil, false, true
		}
	}
	return nil, false, false
}

// Get returns key's value from the cache, loading it on a miss. found is
// false if the origin has no such key (then or within NegativeTTL).
//
// The loaded value is stored only if the entry did not change since the
// load began (a version-checked write), so a load that an Invalidate
// overtook never lands.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	sk := c.storeKey(key)
	it, ok, err := c.cfg.Backend.Get(ctx, sk)
	if err != nil {
		c.report(key, err)
	} else if ok {
		if v, found, hit := decode(it.Value); hit {
			return v, found, nil
		}
	}
	storeUp := err == nil
	r, err := c.group.Do(ctx, key, func(ctx context.Context) (Result, error) {
		// Double-check: a caller whose miss raced with the end of another
		// flight finds that flight's value instead of loading again. The
		// entry's version fences the write below.
		o := store.SetOptions{IfAbsent: true}
		if storeUp {
			it, ok, err := c.cfg.Backend.Get(ctx, sk)
			switch {
			case err != nil:
				storeUp = false
				c.report(key, err)
			case ok:
				if v, found, hit := decode(it.Value); hit {
					return Result{Value: v, Found: found}, nil
				}
				o = store.SetOptions{IfVersion: it.Version}
			}
		}
		v, found, err := c.cfg.Load(ctx, key)
		if err != nil {
			return Result{}, err
		}
		if storeUp && (found || !c.cfg.NoNegative) {
			enc := []byte{tagNegative}
			o.TTL = c.cfg.NegativeTTL
			if found {
				enc = append([]byte{tagValue}, v...)
				o.TTL = Jitter(c.cfg.TTL, c.cfg.Jitter)
			}
			// A lost condition means the entry changed meanwhile (an
			// Invalidate, or another process's load): leave it.
			if _, _, err := c.cfg.Backend.Set(ctx, sk, enc, o); err != nil {
				c.report(key, err)
			}
		}
		return Result{Value: v, Found: found}, nil
	})
	if err != nil {
		return nil, false, err
	}
	return r.Value, r.Found, nil
}

// Invalidate removes key from the cache: the next Get loads it, even if a
// load that began before Invalidate is still running (its result is
// neither stored nor shared with later callers). It leaves a marker that
// lives TTL, so a load that outlasts the TTL itself may still land.
func (c *Cache) Invalidate(ctx context.Context, key string) error {
	_, _, err := c.cfg.Backend.Set(ctx, c.storeKey(key), []byte{tagStale}, store.SetOptions{TTL: max(c.cfg.TTL, c.cfg.NegativeTTL)})
	c.group.Forget(key)
	return err
}
