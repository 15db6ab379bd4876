package sim

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

// EngineValueSize is the value size of every entry EngineCache writes;
// with its 8-byte keys an entry accounts EngineEntrySize bytes.
const EngineValueSize = 56

// EngineEntrySize is the accounted size of one EngineCache entry: an
// 8-byte key, an EngineValueSize-byte value and engine.EntryOverhead.
const EngineEntrySize = 8 + EngineValueSize + engine.EntryOverhead

// EngineCache drives a real engine.Engine with the trace: Get, and on a
// miss Set, with MaxBytes = capacity × EngineEntrySize (so the engine holds
// exactly capacity entries), the default shard count for that cap (or
// Shards if set), the policy under test, a manual clock advancing 1µs per
// access and no expiry goroutine. It measures what sharding (per-shard
// policy instances under one engine-wide budget) costs against the
// policy-only PolicyCache.
type EngineCache struct {
	e     *engine.Engine
	clk   *clock.Manual
	key   [8]byte
	value []byte
	Fault error // first failed Set
}

// NewEngineCache builds an engine for capacity entries; shards 0 means the
// engine's default.
func NewEngineCache(spec evict.Spec, capacity, shards int) (*EngineCache, error) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	e, err := engine.New(engine.Config{
		Shards:         shards,
		Clock:          clk,
		ExpiryInterval: -1,
		MaxBytes:       int64(max(capacity, 1)) * EngineEntrySize,
		Policy:         spec,
	})
	if err != nil {
		return nil, err
	}
	return &EngineCache{e: e, clk: clk, value: make([]byte, EngineValueSize)}, nil
}

// Access implements Cache.
func (c *EngineCache) Access(k uint64) bool {
	c.clk.Advance(time.Microsecond)
	binary.BigEndian.PutUint64(c.key[:], k)
	key := string(c.key[:])
	if _, ok := c.e.Get(key); ok {
		return true
	}
	if _, err := c.e.Set(key, c.value); err != nil && c.Fault == nil {
		c.Fault = fmt.Errorf("sim: engine Set: %w", err)
	}
	return false
}

// Close implements Cache.
func (c *EngineCache) Close() { c.e.Close() }

// Err returns the first failed Set, if any.
func (c *EngineCache) Err() error { return c.Fault }

// Shards reports the engine's shard count.
func (c *EngineCache) Shards() int { return c.e.Stats().Shards }

// EngineContender runs spec through the engine (EngineCache) with the
// default shard count; its name is "<name> (engine)".
func EngineContender(name string, spec evict.Spec) Contender {
	return Contender{Name: name + " (engine)", Tide: true, Engine: true, New: func(n int) Cache {
		c, err := NewEngineCache(spec, n, 0)
		if err != nil {
			panic(err)
		}
		return c
	}}
}
