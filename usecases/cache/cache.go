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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// Loader loads key from the origin. found = false is a miss (cached
// negatively); an error is not cached.
type Loader func(ctx context.Context, key string) (value []byte, found bool, err error)

// Config configures a Cache. Zero fields mean defaults.
type Config struct {
	// Backend holds the entries. Required.
	Backend store.Backend
	// Load loads a missing key. Required.
	Load Loader
	// TTL is the mean lifetime of an entry. 0 means 5 minutes.
	TTL time.Duration
	// Jitter is the relative spread of TTLs, in [0, 1). 0 means 0.1 (±10%).
	Jitter float64
	// NoJitter disables jitter (every entry lives exactly TTL).
	NoJitter bool
	// NegativeTTL is how long a miss is remembered. 0 means 10 seconds.
	NegativeTTL time.Duration
	// NoNegative disables negative caching.
	NoNegative bool
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

// New returns a Cache for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Cache, error) {
	switch {
	case cfg.Backend == nil:
		return nil, fmt.Errorf("%w: Backend is nil", ErrInvalidConfig)
	case cfg.Load == nil:
		return nil, fmt.Errorf("%w: Load is nil", ErrInvalidConfig)
	case cfg.TTL < 0 || cfg.NegativeTTL < 0:
		return nil, fmt.Errorf("%w: TTL and NegativeTTL must be ≥ 0", ErrInvalidConfig)
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
	return &Cache{cfg: cfg}, nil
}

// Jitter returns ttl spread uniformly over [ttl·(1−frac), ttl·(1+frac)],
// never below 1 ns. frac outside [0, 1) is clamped.
func Jitter(ttl time.Duration, frac float64) time.Duration {
	if ttl <= 0 || !(frac > 0) {
		return ttl
	}
	frac = min(frac, 0.999)
	spread := float64(ttl) * frac
	d := time.Duration(float64(ttl) - spread + rand.Float64()*2*spread)
	return max(d, 1)
}

const (
	tagValue    = 'v'
	tagNegative = 'n'
)

func (c *Cache) report(key string, err error) {
	if c.cfg.OnError != nil {
		c.cfg.OnError(key, err)
	}
}

// storeKey is the prefix and key, or the key's SHA-256 if it is longer than
// 256 bytes (an oversized key is still cached instead of failing in the
// store and reaching the origin every time).
func (c *Cache) storeKey(key string) string {
	if len(key) > 256 {
		sum := sha256.Sum256([]byte(key))
		return c.cfg.Prefix + "sha256:" + hex.EncodeToString(sum[:])
	}
	return c.cfg.Prefix + key
}

// Get returns key's value from the cache, loading it on a miss. found is
// false if the origin has no such key (then or within NegativeTTL).
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	sk := c.storeKey(key)
	it, ok, err := c.cfg.Backend.Get(ctx, sk)
	if err != nil {
		c.report(key, err)
	} else if ok && len(it.Value) > 0 {
		switch it.Value[0] {
		case tagValue:
			return it.Value[1:], true, nil
		case tagNegative:
			return nil, false, nil
		}
	}
	storeUp := err == nil
	r, err := c.group.Do(ctx, key, func(ctx context.Context) (Result, error) {
		// Double-check: a caller whose miss raced with the end of another
		// flight finds that flight's value instead of loading again.
		if storeUp {
			if it, ok, err := c.cfg.Backend.Get(ctx, sk); err == nil && ok && len(it.Value) > 0 {
				switch it.Value[0] {
				case tagValue:
					return Result{Value: it.Value[1:], Found: true}, nil
				case tagNegative:
					return Result{}, nil
				}
			}
		}
		v, found, err := c.cfg.Load(ctx, key)
		if err != nil {
			return Result{}, err
		}
		if storeUp {
			var werr error
			switch {
			case found:
				_, _, werr = c.cfg.Backend.Set(ctx, sk, append([]byte{tagValue}, v...), store.SetOptions{TTL: Jitter(c.cfg.TTL, c.cfg.Jitter)})
			case !c.cfg.NoNegative:
				_, _, werr = c.cfg.Backend.Set(ctx, sk, []byte{tagNegative}, store.SetOptions{TTL: c.cfg.NegativeTTL})
			}
			if werr != nil {
				c.report(key, werr)
			}
		}
		return Result{Value: v, Found: found}, nil
	})
	if err != nil {
		return nil, false, err
	}
	return r.Value, r.Found, nil
}

// Invalidate removes key from the cache (the next Get loads it).
func (c *Cache) Invalidate(ctx context.Context, key string) error {
	_, err := c.cfg.Backend.Delete(ctx, c.storeKey(key))
	return err
}
