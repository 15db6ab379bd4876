// Package bench compares tide with the in-process caches users would pick
// instead. Every peer sits behind one small adapter (Cache) so that the
// workloads in this package and in bench/cmd/* drive them identically.
//
// The peers are configured as a user who wants "hold everything, expire on
// time" would configure them; where a peer cannot do what a workload asks,
// its Caps say so and the workload reports it (see README.md, "Peers").
package bench

import (
	"context"
	"fmt"
	"sort"
	"time"
	"unsafe"

	"github.com/Yiling-J/theine-go"
	"github.com/allegro/bigcache/v3"
	"github.com/coocood/freecache"
	"github.com/dgraph-io/ristretto/v2"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jellydator/ttlcache/v3"
	"github.com/maypok86/otter/v2"
	gocache "github.com/patrickmn/go-cache"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

// TTLMode says what kind of expiry a peer supports.
type TTLMode uint8

const (
	// PerEntryTTL: every write may carry its own TTL.
	PerEntryTTL TTLMode = iota
	// GlobalTTL: one TTL fixed at construction applies to every entry; the
	// ttl argument of SetTTL is ignored.
	GlobalTTL
	// NoTTL: entries never expire; SetTTL is a plain Set.
	NoTTL
)

func (m TTLMode) String() string {
	return [...]string{"per-entry", "global only", "none"}[m]
}

// Caps describe what a peer can do.
type Caps struct {
	TTL TTLMode
	// ByteBounded: capacity is in bytes (cost = key + value), not entries.
	ByteBounded bool
	// AsyncSets: a Set is applied later by a background goroutine and may
	// be dropped under contention (ristretto); reads may miss a fresh write.
	AsyncSets bool
	// CopiesValues: reads return a copy (or append into the caller's
	// buffer) rather than the stored slice.
	CopiesValues bool
	// Bounded: the peer has a capacity and evicts; false for go-cache and
	// unbounded tide.
	Bounded bool
	// Note is a one-line caveat shown in the docs.
	Note string
}

// Cache is the common interface of every adapter.
type Cache interface {
	// Get appends the value of key to dst (adapters of peers that return
	// their stored slice return it as is, without copying) and reports
	// whether it was found.
	Get(dst []byte, key string) ([]byte, bool)
	// Set stores value under key without a TTL.
	Set(key string, value []byte)
	// SetTTL stores value under key, expiring ttl from now (GlobalTTL peers
	// use their construction-time TTL; NoTTL peers never expire).
	SetTTL(key string, value []byte, ttl time.Duration)
	// Len returns the number of resident entries as the peer counts them
	// (expired ones not yet reclaimed included), or -1 if it cannot tell.
	Len() int
	// Flush waits for asynchronous writes to be applied (no-op for most).
	Flush()
	// Close releases the cache and stops its goroutines.
	Close()
}

// Options size a peer.
type Options struct {
	// Entries is the number of entries the workload will keep resident; the
	// cache is made large enough to hold them all.
	Entries int
	// KeyLen and ValueLen are the sizes of keys and values (for byte-bounded
	// peers' capacity).
	KeyLen, ValueLen int
	// GlobalTTL is the TTL given to GlobalTTL peers at construction when
	// the workload uses TTLs; 0 means entries never expire.
	GlobalTTL time.Duration
	// Reclaim is the period of background expiry for peers where it is a
	// setting (go-cache janitor, bigcache CleanWindow); 0 means 1 s.
	Reclaim time.Duration
	// NoBackground turns off background expiry where it is a setting
	// (tide, go-cache, ttlcache), for timing an explicit pass (ExpireNow).
	NoBackground bool
	// Headroom is the capacity of bounded peers (tide-lru, otter,
	// ristretto, theine and the capped configurations) as a multiple of
	// what Entries entries cost them; 0 means DefaultHeadroom.
	Headroom float64
}

// DefaultHeadroom: bounded peers are sized at twice the data, so that no
// workload evicts.
const DefaultHeadroom = 2.0

// CappedHeadroom is the bound of the capped configurations: 1.5× the key
// space, the configuration of a user who sets a cap.
const CappedHeadroom = 1.5

// capacity returns the capacity of a bounded peer whose Entries entries
// cost per each.
func (o Options) capacity(per int64) int64 {
	h := o.Headroom
	if h == 0 {
		h = DefaultHeadroom
	}
	return int64(h * float64(int64(o.Entries)*per))
}

func (o Options) payload() int64 { return int64(o.KeyLen + o.ValueLen) }

func (o Options) reclaim() time.Duration {
	if o.Reclaim > 0 {
		return o.Reclaim
	}
	return time.Second
}

// Peer names and builds one cache.
type Peer struct {
	Name    string
	Version string
	Caps    Caps
	New     func(o Options) Cache
}

// Peers lists every peer, tide first.
var Peers = []Peer{
	{"tide", "this repo", Caps{TTL: PerEntryTTL, CopiesValues: true, Note: "MaxBytes 0: unbounded, no eviction (like go-cache)"}, newTide(evict.NoEviction)},
	{"tide-lru", "this repo", Caps{TTL: PerEntryTTL, CopiesValues: true, ByteBounded: true, Bounded: true, Note: "MaxBytes 2x the data, allkeys-lru policy"}, newTide(evict.AllKeysLRU)},
	{"otter", "v2.4.0", Caps{TTL: PerEntryTTL, ByteBounded: true, Bounded: true, Note: "per-entry TTL via ExpiryWritingFunc on a {value, ttl} pair"}, newOtter},
	{"ristretto", "v2.4.2", Caps{TTL: PerEntryTTL, ByteBounded: true, Bounded: true, AsyncSets: true, Note: "sets are buffered and may be dropped; IgnoreInternalCost"}, newRistretto},
	{"theine", "v0.6.3", Caps{TTL: PerEntryTTL, ByteBounded: true, Bounded: true}, newTheine},
	{"bigcache", "v3.1.0", Caps{TTL: GlobalTTL, ByteBounded: true, Bounded: true, CopiesValues: true, Note: "one LifeWindow for all entries; Get allocates a copy"}, newBigcache},
	{"freecache", "v1.2.7", Caps{TTL: PerEntryTTL, ByteBounded: true, Bounded: true, CopiesValues: true, Note: "TTL in whole seconds; preallocated ring buffers; lazy expiry only"}, newFreecache},
	{"go-cache", "v2.1.0+incompatible", Caps{TTL: PerEntryTTL, Note: "unbounded map[string]Item; values boxed in interface{}"}, newGoCache},
	{"ttlcache", "v3.4.1", Caps{TTL: PerEntryTTL, Bounded: true, Note: "capacity in entries; touch-on-hit disabled"}, newTTLCache},
	{"golang-lru", "v2.0.7", Caps{TTL: NoTTL, Bounded: true, Note: "no TTL at all (skipped in TTL workloads)"}, newLRU},
	{"golang-lru-exp", "v2.0.7 (expirable)", Caps{TTL: GlobalTTL, Bounded: true, Note: "expirable.LRU: one TTL for all entries"}, newExpirable},
}

// RecommendedPolicy is the eviction policy the bench runs tide with where
// a user would set a cap: the policy the docs recommend for caches,
// evict.Adaptive (W-TinyLFU that picks its window and admission rule by
// miniature simulation; HITRATIO.md has its hit ratios beside otter's and
// OPT's, and the rows where it still falls short).
var RecommendedPolicy = evict.Adaptive

// CappedPeers are the configurations of a user who sets a cap: bounded at
// CappedHeadroom times the key space, no TTLs (cmd/speed, cmd/memory).
// They are not in Peers, so the "all" sweeps leave them out; Lookup and
// ParsePeers("capped") find them.
var CappedPeers = []Peer{
	{"tide-capped", "this repo", Caps{TTL: PerEntryTTL, CopiesValues: true, ByteBounded: true, Bounded: true, Note: "MaxBytes 1.5x entries × (key + value + EntryOverhead), RecommendedPolicy"}, withHeadroom(CappedHeadroom, newTide(RecommendedPolicy))},
	{"otter-capped", "v2.4.0", Caps{TTL: NoTTL, Bounded: true, Note: "MaximumSize 1.5x entries, no Weigher, no expiry calculator"}, newOtterSized},
	{"otter-capped-sync", "v2.4.0", Caps{TTL: NoTTL, Bounded: true, Note: "otter-capped with an Executor that runs maintenance on the calling goroutine: reads are dropped from its policy only while a drain is under way, as in tide, where the default executor (a new goroutine) cannot run on one core until the reader is preempted, so nearly every read is dropped there"}, newOtterSizedSync},
	{"ristretto-capped", "v2.4.2", Caps{TTL: PerEntryTTL, ByteBounded: true, Bounded: true, AsyncSets: true, Note: "MaxCost 1.5x the data (cost key + value); sets are buffered and may be dropped"}, withHeadroom(CappedHeadroom, newRistretto)},
	{"theine-capped", "v0.6.3", Caps{TTL: PerEntryTTL, ByteBounded: true, Bounded: true, Note: "max size 1.5x the data (cost key + value)"}, withHeadroom(CappedHeadroom, newTheine)},
	// tide-exact is the exact-capacity check: a cap of exactly Entries
	// entries' worth must hold all of them.
	{"tide-exact", "this repo", Caps{TTL: PerEntryTTL, CopiesValues: true, ByteBounded: true, Bounded: true, Note: "MaxBytes exactly entries × (key + value + EntryOverhead), RecommendedPolicy"}, withHeadroom(1, newTide(RecommendedPolicy))},
}

func withHeadroom(h float64, build func(Options) Cache) func(Options) Cache {
	return func(o Options) Cache {
		o.Headroom = h
		return build(o)
	}
}

func names(ps []Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// PeerNames returns the names of all peers (not the capped ones).
func PeerNames() []string { return names(Peers) }

// CappedNames returns the names of the capped configurations.
func CappedNames() []string { return names(CappedPeers) }

// Lookup returns the peer named name, from Peers or CappedPeers.
func Lookup(name string) (Peer, error) {
	for _, ps := range [][]Peer{Peers, CappedPeers} {
		for _, p := range ps {
			if p.Name == name {
				return p, nil
			}
		}
	}
	all := append(PeerNames(), CappedNames()...)
	sort.Strings(all)
	return Peer{}, fmt.Errorf("unknown peer %q (have %v)", name, all)
}

func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// ---- tide ----

type tideCache struct{ e *engine.Engine }

// newTide builds tide unbounded if policy is evict.NoEviction, otherwise
// capped at the headroom of o with policy.
func newTide(policy evict.Spec) func(o Options) Cache {
	return func(o Options) Cache {
		cfg := engine.Config{}
		if o.NoBackground {
			cfg.ExpiryInterval = -1
		}
		if policy.New != nil {
			cfg.MaxBytes = o.capacity(o.payload() + engine.EntryOverhead)
			cfg.Policy = policy
		}
		e, err := engine.New(cfg)
		if err != nil {
			panic(err)
		}
		return tideCache{e}
	}
}

func (c tideCache) Get(dst []byte, key string) ([]byte, bool) { return c.e.AppendGet(dst, key) }

// GetCopy is tide's plain Get (a fresh copy per read), for ReadCopy.
func (c tideCache) GetCopy(key string) ([]byte, bool) { return c.e.Get(key) }

// View is tide's zero-copy read (engine.View), for ReadView.
func (c tideCache) View(key string, fn func([]byte)) bool { return c.e.View(key, fn) }

func (c tideCache) Set(key string, v []byte) {
	if _, err := c.e.Set(key, v); err != nil {
		panic(err)
	}
}
func (c tideCache) SetTTL(key string, v []byte, ttl time.Duration) {
	if _, err := c.e.SetTTL(key, v, ttl); err != nil {
		panic(err)
	}
}
func (c tideCache) Len() int { return c.e.Len() }
func (c tideCache) Flush()   {}
func (c tideCache) Close()   { c.e.Close() }

// Engine exposes the underlying engine of a tide adapter (nil otherwise).
func Engine(c Cache) *engine.Engine {
	if t, ok := c.(tideCache); ok {
		return t.e
	}
	return nil
}

// ---- otter ----

type otterVal struct {
	v   []byte
	ttl time.Duration
}

type otterCache struct {
	c *otter.Cache[string, otterVal]
}

func newOtter(o Options) Cache {
	return otterCache{otter.Must(&otter.Options[string, otterVal]{
		MaximumWeight:   uint64(o.capacity(o.payload())),
		Weigher:         func(k string, v otterVal) uint32 { return uint32(len(k) + len(v.v)) },
		InitialCapacity: o.Entries,
		ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[string, otterVal]) time.Duration {
			if e.Value.ttl == 0 {
				return 1 << 62 // "an excessively long period" = no expiry
			}
			return e.Value.ttl
		}),
	})}
}

func (c otterCache) Get(dst []byte, key string) ([]byte, bool) {
	v, ok := c.c.GetIfPresent(key)
	return v.v, ok
}
func (c otterCache) Set(key string, v []byte) { c.c.Set(key, otterVal{v: v}) }
func (c otterCache) SetTTL(key string, v []byte, ttl time.Duration) {
	c.c.Set(key, otterVal{v: v, ttl: ttl})
}
func (c otterCache) Len() int { return c.c.EstimatedSize() }
func (c otterCache) Flush()   { c.c.CleanUp() }
func (c otterCache) Close()   { c.c.StopAllGoroutines() }

// otterSized is otter as the users configure it for a cap:
// MaximumSize in entries, values stored as is, no expiry calculator.
type otterSized struct{ c *otter.Cache[string, []byte] }

func newOtterSized(o Options) Cache {
	return otterSized{otter.Must(&otter.Options[string, []byte]{
		MaximumSize:     int(o.capacity(1)),
		InitialCapacity: o.Entries,
	})}
}

// newOtterSizedSync is newOtterSized with a synchronous Executor: the
// goroutine that fills a read buffer drains it (as tide's readers do), so
// the policy sees the reads that otter's default executor, a goroutine
// that waits for a free P, leaves behind while its drain is pending.
func newOtterSizedSync(o Options) Cache {
	return otterSized{otter.Must(&otter.Options[string, []byte]{
		MaximumSize:     int(o.capacity(1)),
		InitialCapacity: o.Entries,
		Executor:        func(fn func()) { fn() },
	})}
}

func (c otterSized) Get(dst []byte, key string) ([]byte, bool) { return c.c.GetIfPresent(key) }
func (c otterSized) Set(key string, v []byte)                  { c.c.Set(key, v) }

// SetTTL ignores ttl: this configuration has no expiry (Caps.TTL NoTTL).
func (c otterSized) SetTTL(key string, v []byte, _ time.Duration) { c.c.Set(key, v) }
func (c otterSized) Len() int                                     { return c.c.EstimatedSize() }
func (c otterSized) Flush()                                       { c.c.CleanUp() }
func (c otterSized) Close()                                       { c.c.StopAllGoroutines() }

// ---- ristretto ----

type ristrettoCache struct {
	c *ristretto.Cache[string, []byte]
}

func newRistretto(o Options) Cache {
	c, err := ristretto.NewCache(&ristretto.Config[string, []byte]{
		NumCounters:        10 * int64(o.Entries),
		MaxCost:            o.capacity(o.payload()),
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		panic(err)
	}
	return ristrettoCache{c}
}

func (c ristrettoCache) Get(dst []byte, key string) ([]byte, bool) { return c.c.Get(key) }
func (c ristrettoCache) Set(key string, v []byte) {
	c.c.Set(key, v, int64(len(key)+len(v)))
}
func (c ristrettoCache) SetTTL(key string, v []byte, ttl time.Duration) {
	c.c.SetWithTTL(key, v, int64(len(key)+len(v)), ttl)
}
func (c ristrettoCache) Len() int { return -1 }
func (c ristrettoCache) Flush()   { c.c.Wait() }
func (c ristrettoCache) Close()   { c.c.Close() }

// ---- theine ----

type theineCache struct{ c *theine.Cache[string, []byte] }

func newTheine(o Options) Cache {
	c, err := theine.NewBuilder[string, []byte](o.capacity(o.payload())).Build()
	if err != nil {
		panic(err)
	}
	return theineCache{c}
}

func (c theineCache) Get(dst []byte, key string) ([]byte, bool) { return c.c.Get(key) }
func (c theineCache) Set(key string, v []byte)                  { c.c.Set(key, v, int64(len(key)+len(v))) }
func (c theineCache) SetTTL(key string, v []byte, ttl time.Duration) {
	c.c.SetWithTTL(key, v, int64(len(key)+len(v)), ttl)
}
func (c theineCache) Len() int { return c.c.Len() }
func (c theineCache) Flush()   { c.c.Wait() }
func (c theineCache) Close()   { c.c.Close() }

// ---- bigcache ----

type bigCache struct{ c *bigcache.BigCache }

func newBigcache(o Options) Cache {
	cfg := bigcache.DefaultConfig(o.GlobalTTL)
	if o.GlobalTTL == 0 {
		cfg.LifeWindow = 1 << 62
		cfg.CleanWindow = 0
	} else {
		cfg.CleanWindow = o.reclaim()
	}
	cfg.MaxEntriesInWindow = o.Entries
	cfg.MaxEntrySize = int(o.payload())
	cfg.Verbose = false
	c, err := bigcache.New(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	return bigCache{c}
}

func (c bigCache) Get(dst []byte, key string) ([]byte, bool) {
	v, err := c.c.Get(key)
	if err != nil {
		return dst, false
	}
	return append(dst, v...), true
}
func (c bigCache) Set(key string, v []byte)                       { c.c.Set(key, v) }
func (c bigCache) SetTTL(key string, v []byte, ttl time.Duration) { c.c.Set(key, v) }
func (c bigCache) Len() int                                       { return c.c.Len() }
func (c bigCache) Flush()                                         {}
func (c bigCache) Close()                                         { c.c.Close() }

// ---- freecache ----

// FreecacheHeader is freecache's per-entry header in its ring buffer.
const FreecacheHeader = 24

type freeCache struct{ c *freecache.Cache }

func newFreecache(o Options) Cache {
	// Large enough to hold every entry with its 24-byte header, with 25%
	// slack for the imbalance between its 256 segments.
	size := int64(o.Entries) * (o.payload() + FreecacheHeader) * 5 / 4
	return freeCache{freecache.NewCache(int(max(size, 512<<10)))}
}

func (c freeCache) Get(dst []byte, key string) ([]byte, bool) {
	// GetWithBuf copies into the spare capacity of dst when it fits.
	free := dst[len(dst):cap(dst)]
	v, err := c.c.GetWithBuf(bytesOf(key), free)
	if err != nil {
		return dst, false
	}
	if cap(free) >= len(v) {
		return dst[:len(dst)+len(v)], true
	}
	return append(dst, v...), true
}
func (c freeCache) Set(key string, v []byte) { c.c.Set(bytesOf(key), v, 0) }
func (c freeCache) SetTTL(key string, v []byte, ttl time.Duration) {
	c.c.Set(bytesOf(key), v, int(max(1, (ttl+time.Second-1)/time.Second)))
}
func (c freeCache) Len() int { return int(c.c.EntryCount()) }
func (c freeCache) Flush()   {}
func (c freeCache) Close()   { c.c.Clear() }

// ---- go-cache ----

type goCache struct{ c *gocache.Cache }

func newGoCache(o Options) Cache {
	if o.NoBackground {
		return goCache{gocache.New(gocache.NoExpiration, 0)}
	}
	return goCache{gocache.New(gocache.NoExpiration, o.reclaim())}
}

func (c goCache) Get(dst []byte, key string) ([]byte, bool) {
	v, ok := c.c.Get(key)
	if !ok {
		return dst, false
	}
	return v.([]byte), true
}
func (c goCache) Set(key string, v []byte)                       { c.c.Set(key, v, gocache.NoExpiration) }
func (c goCache) SetTTL(key string, v []byte, ttl time.Duration) { c.c.Set(key, v, ttl) }
func (c goCache) Len() int                                       { return c.c.ItemCount() }
func (c goCache) Flush()                                         {}
func (c goCache) Close()                                         { c.c.Flush() }

// ExpireNow runs the peer's explicit expiry pass until no due entry is
// left, for the peers that have one, and names it.
func ExpireNow(c Cache) (method string, ok bool) {
	switch c := c.(type) {
	case tideCache:
		for {
			if _, more := c.e.RunExpiryCycle(); !more {
				break
			}
		}
		return "RunExpiryCycle until done", true
	case goCache:
		c.c.DeleteExpired()
		return "DeleteExpired (full scan)", true
	case ttlCache:
		c.c.DeleteExpired()
		return "DeleteExpired (deadline heap)", true
	case otterCache:
		c.c.CleanUp()
		return "CleanUp (timer wheel)", true
	}
	return "", false
}

func newForExpireCost(p Peer, n int) Cache {
	return p.New(Options{Entries: n, KeyLen: KeyLen, ValueLen: ValueLen, NoBackground: true})
}

// ---- ttlcache ----

type ttlCache struct {
	c *ttlcache.Cache[string, []byte]
}

func newTTLCache(o Options) Cache {
	c := ttlcache.New(
		ttlcache.WithCapacity[string, []byte](uint64(o.Entries)),
		ttlcache.WithDisableTouchOnHit[string, []byte](),
	)
	if !o.NoBackground {
		go c.Start()
	}
	return ttlCache{c}
}

func (c ttlCache) Get(dst []byte, key string) ([]byte, bool) {
	it := c.c.Get(key)
	if it == nil {
		return dst, false
	}
	return it.Value(), true
}
func (c ttlCache) Set(key string, v []byte) { c.c.Set(key, v, ttlcache.NoTTL) }
func (c ttlCache) SetTTL(key string, v []byte, ttl time.Duration) {
	c.c.Set(key, v, ttl)
}

// Len counts resident entries: ttlcache's own Len skips expired ones.
func (c ttlCache) Len() int {
	m := c.c.Metrics()
	return int(m.Insertions - m.Evictions)
}
func (c ttlCache) Flush() {}
func (c ttlCache) Close() { c.c.Stop(); c.c.DeleteAll() }

// ---- golang-lru ----

type lruCache struct{ c *lru.Cache[string, []byte] }

func newLRU(o Options) Cache {
	c, err := lru.New[string, []byte](o.Entries)
	if err != nil {
		panic(err)
	}
	return lruCache{c}
}

func (c lruCache) Get(dst []byte, key string) ([]byte, bool)      { return c.c.Get(key) }
func (c lruCache) Set(key string, v []byte)                       { c.c.Add(key, v) }
func (c lruCache) SetTTL(key string, v []byte, ttl time.Duration) { c.c.Add(key, v) }
func (c lruCache) Len() int                                       { return c.c.Len() }
func (c lruCache) Flush()                                         {}
func (c lruCache) Close()                                         { c.c.Purge() }

type expCache struct {
	c *expirable.LRU[string, []byte]
}

func newExpirable(o Options) Cache {
	return expCache{expirable.NewLRU[string, []byte](o.Entries, nil, o.GlobalTTL)}
}

func (c expCache) Get(dst []byte, key string) ([]byte, bool)      { return c.c.Get(key) }
func (c expCache) Set(key string, v []byte)                       { c.c.Add(key, v) }
func (c expCache) SetTTL(key string, v []byte, ttl time.Duration) { c.c.Add(key, v) }
func (c expCache) Len() int                                       { return c.c.Len() }
func (c expCache) Flush()                                         {}
func (c expCache) Close()                                         { c.c.Purge() }
