// Package redisstore implements store.Backend, the seam under tide's use-case
// adapters (sessions, flags, rate limits, idempotency, leases), on a Redis
// server: single node, Sentinel or Cluster, through go-redis's
// UniversalClient. It is the backend to move to when one service runs as
// several processes: a rate limit or a lease held in each process's memory
// is per process, one held in Redis is shared.
//
// Switching is one constructor:
//
//	b, err := embedded.New(embedded.Config{Engine: e})              // in process
//	b, err := redisstore.New(redisstore.Config{Client: rdb})        // shared
//
// # How it maps
//
// Every primitive and every decision is one Lua script, run with EVALSHA in
// one round trip, reading the time from Redis TIME inside the script (never
// from the client), so replicas of a service agree on one clock. Every key
// a primitive writes is a hash {v: value, ver: version}. Versions come from
// a counter per Cluster slot (key "tide:ver:{tag}", where tag is a short
// string that hashes to that slot), so a script touches only keys of one
// slot; the counter has no TTL and is floored at the server clock in
// microseconds, so a version is never reused for a key, even after a
// delete, an expiry, a FLUSHALL or a restart without persistence. The
// counters' keys begin with store.ReservedPrefix (after Config.Prefix),
// which no caller's key may: Set and the decisions refuse such a key with
// store.ErrInvalidArgument, and Get, Delete and CompareAndDelete report it
// missing, as on every backend.
//
// # Differences from the embedded engine
//
//   - TTLs have millisecond precision (PEXPIRE, rounded up) and reported
//     durations are multiples of a millisecond (TTL) or microsecond
//     (decisions), where the engine has nanoseconds.
//   - A key is gone from its deadline's millisecond on (tide's rule); Redis
//     itself would still serve it during that millisecond.
//   - Pinning does not exist. Keys the adapters pin (flags, audit logs,
//     fencing counters, sessions of record) are written without a TTL, and
//     so are the version counters: run the server with maxmemory-policy
//     noeviction or a volatile-* policy, never allkeys-*, or Redis may evict
//     a fencing counter. Check reports a wrong policy.
//   - The keys of one decision must hash to one Cluster slot: the adapters
//     wrap the scoping part of a key in braces with store.HashTag
//     ("tide:lease:{orders}", "tide:flag:{%7Dbeta}" for the name "}beta").
//     The two keys of a lease or a flag write must share a non-empty hash
//     tag (store.KeyTag) on every topology and every backend, else
//     store.ErrInvalidArgument before anything is sent.
//   - A key that holds no value with a version (another Redis type, a
//     lease or idempotency record, a hash missing its value or version) is
//     store.ErrCorrupt for Get, and a key of another Redis type for
//     conditional Set and CompareAndDelete; the key is left as it was. Get
//     reads a token bucket's or fixed window's record (its time or count).
//     A decision that finds a record field that is not base-10 digits
//     ("nan", "-1", "0x10"), or a fence or audit log that is not what it
//     writes, reports store.ErrCorrupt and changes nothing.
//   - Numbers inside scripts are Lua doubles: fencing tokens, token bucket
//     bursts (Capacity × Interval, in microseconds) and fixed window limits
//     must stay below 2^52; larger parameters are store.ErrInvalidArgument.
//   - A transport failure is store.ErrUnavailable (wrapping go-redis's
//     error): the operation may or may not have happened. So is a script
//     reply of a shape the backend does not expect, never read as an
//     answer.
//
// Requires Redis 7.0 or later (script flags). Its tests verify Redis 7.0
// as a single node, a Cluster and a Sentinel deployment; Valkey 7.2 or
// later implements the same commands but is not tested.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/store"
)

// DefaultMaxKeyLen is the default key length limit, the embedded engine's.
const DefaultMaxKeyLen = 64 << 10

// maxLuaInt bounds the integers the scripts compute with in doubles.
const maxLuaInt = 1 << 52

// Config configures a Backend.
type Config struct {
	// Client is the connection to Redis: a *redis.Client, a
	// failover (Sentinel) client or a *redis.ClusterClient. Required. The
	// Backend does not close it.
	Client redis.UniversalClient
	// Prefix scopes the Backend: it is prepended to every key, the
	// version counters' included, so that Backends with different
	// prefixes on one server never reach each other's keys (store package
	// doc, "Scopes": a name followed by one ':', with no other ':' and no
	// '{', "billing:"; store.ValidatePrefix, else New returns
	// store.ErrInvalidArgument). "" means no scope: the whole server.
	Prefix string
	// MaxKeyLen bounds the length of a key (without Prefix); longer is
	// store.ErrKeyTooLarge. 0 means DefaultMaxKeyLen.
	MaxKeyLen int
}

// Backend is store.Backend on Redis. It is safe for concurrent use and holds
// no state of its own: any number of Backends, in any number of processes,
// on one server behave as one.
type Backend struct {
	c       redis.UniversalClient
	prefix  string
	maxKey  int
	cluster bool
}

var _ store.Backend = (*Backend)(nil)

// New returns a Backend on cfg.Client. It does not contact the server; call
// Check for that. A nil Client (a nil interface, or one holding a nil
// pointer) or an invalid Prefix is store.ErrInvalidArgument.
func New(cfg Config) (*Backend, error) {
	if v := reflect.ValueOf(cfg.Client); cfg.Client == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("%w: redisstore.Config.Client is nil", store.ErrInvalidArgument)
	}
	if err := store.ValidatePrefix(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("redisstore.Config.Prefix: %w", err)
	}
	if cfg.MaxKeyLen <= 0 {
		cfg.MaxKeyLen = DefaultMaxKeyLen
	}
	_, cluster := cfg.Client.(*redis.ClusterClient)
	return &Backend{c: cfg.Client, prefix: cfg.Prefix, maxKey: cfg.MaxKeyLen, cluster: cluster}, nil
}

// Client returns the client the Backend uses.
func (b *Backend) Client() redis.UniversalClient { return b.c }

// Check contacts the server and verifies what the Backend relies on: Redis
// 7 or later (or Valkey), and a maxmemory-policy that never evicts a key
// without a TTL (noeviction or volatile-*). On a Cluster client it checks
// every master (ForEachMaster) and reports each misconfigured one, in
// address order, prefixed by its address. A server that refuses CONFIG
// GET with an error reply (some managed services rename it) passes the
// policy check: verify it by hand there; a transport failure is
// store.ErrUnavailable, never a pass. Replicas are not checked: a replica promoted by a
// failover must have been configured like its master.
func (b *Backend) Check(ctx context.Context) error {
	cc, ok := b.c.(*redis.ClusterClient)
	if !ok {
		return b.checkNode(ctx, b.c)
	}
	type nodeErr struct {
		addr string
		err  error
	}
	var (
		mu   sync.Mutex // guards errs
		errs []nodeErr
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if err := b.checkNode(ctx, c); err != nil {
			mu.Lock()
			errs = append(errs, nodeErr{c.Options().Addr, err})
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return b.fail(ctx, err)
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].addr < errs[j].addr })
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = fmt.Errorf("master %s: %w", e.addr, e.err)
	}
	return errors.Join(all...)
}

// checkNode checks one server (Check's doc).
func (b *Backend) checkNode(ctx context.Context, c redis.Cmdable) error {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return b.fail(ctx, err)
	}
	major := 0
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			major, _ = strconv.Atoi(strings.SplitN(v, ".", 2)[0])
		}
	}
	if major < 7 {
		return fmt.Errorf("redisstore: server reports redis_version major %d; Redis 7.0+ or Valkey 7.2+ is required", major)
	}
	pol, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	var refused redis.Error
	if errors.As(err, &refused) {
		if err := b.fail(ctx, err); errors.Is(err, store.ErrUnavailable) {
			return err // LOADING, BUSY…: the server cannot answer now
		}
		return nil // the server refuses CONFIG GET: check by hand
	}
	if err != nil {
		return b.fail(ctx, err) // nothing was verified
	}
	if p := pol["maxmemory-policy"]; strings.HasPrefix(p, "allkeys-") {
		return fmt.Errorf("redisstore: maxmemory-policy is %s, which may evict fencing counters, flags and version counters; use noeviction or a volatile-* policy", p)
	}
	return nil
}

func (b *Backend) key(k string) string { return b.prefix + k }

// counter returns the version counter key of the slot of the (prefixed)
// key k.
func (b *Backend) counter(k string) string {
	return b.prefix + counterPrefix + "{" + slotTag(slot(k)) + "}"
}

// counterPrefix begins every version counter's key (after Config.Prefix):
// store.ReservedPrefix, so that a caller's key that begins with it is
// refused (Set, decisions) or cannot exist (Get, Delete,
// CompareAndDelete), as on every backend, and no caller can read, replace
// or delete a counter.
const counterPrefix = store.ReservedPrefix

// checkKey checks a key a call would write: not longer than the server
// accepts, not a version counter's.
func (b *Backend) checkKey(k string) error {
	if len(k) > b.maxKey {
		return fmt.Errorf("%w: %d bytes, limit %d", store.ErrKeyTooLarge, len(k), b.maxKey)
	}
	if store.Reserved(k) {
		return fmt.Errorf("%w: key %q begins with %q, the backend's version counters' namespace", store.ErrInvalidArgument, k, counterPrefix)
	}
	return nil
}

// sameSlot checks, on a Cluster, that the keys of one decision share a slot.
func (b *Backend) sameSlot(keys ...string) error {
	if !b.cluster {
		return nil
	}
	s := slot(keys[0])
	for _, k := range keys[1:] {
		if slot(k) != s {
			return fmt.Errorf("%w: keys %q and %q hash to different Cluster slots; wrap their common part in braces", store.ErrInvalidArgument, keys[0], k)
		}
	}
	return nil
}

// run runs s and returns its reply, nil for a nil reply.
//
// go-redis retries a command after a timeout or a dropped connection; for
// a decision that would apply it twice (a claim answered "in progress" to
// its own owner, a token bucket charged twice). So scripts run as commands
// marked NoRetry, and a failure after the command may have reached the
// server is returned as store.ErrUnavailable ("may or may not have
// happened"), never replayed. EVALSHA answered NOSCRIPT (the script was not
// run) falls back to EVAL, which loads it.
func (b *Backend) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	v, err := b.eval(ctx, "evalsha", s.Hash(), keys, args)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = b.eval(ctx, "eval", scriptSource[s], keys, args)
	}
	if err == redis.Nil {
		return nil, nil
	}
	if err != nil {
		return nil, b.fail(ctx, err)
	}
	return v, nil
}

// noRetryCmd is a command go-redis never sends twice.
type noRetryCmd struct{ *redis.Cmd }

func (noRetryCmd) NoRetry() bool { return true }

func (b *Backend) eval(ctx context.Context, verb, script string, keys []string, args []any) (any, error) {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, verb, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := noRetryCmd{redis.NewCmd(ctx, a...)}
	_ = b.c.Process(ctx, cmd)
	return cmd.Result()
}

// fail classifies an error from go-redis.
func (b *Backend) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if errors.Is(err, ctx.Err()) {
			return fmt.Errorf("redisstore: %w", err)
		}
		return fmt.Errorf("redisstore: %w: %w", ctx.Err(), err)
	}
	if errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		code, _, _ := strings.Cut(msg, " ")
		switch code {
		case "OOM":
			return fmt.Errorf("%w: %w", store.ErrOutOfMemory, err)
		case "INVALIDTTL":
			return fmt.Errorf("%w: %w: %w", store.ErrInvalidArgument, store.ErrInvalidTTL, err)
		case "WRONGTYPE":
			return fmt.Errorf("%w: key holds a value written by something else: %w", store.ErrCorrupt, err)
		case "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "BUSY", "NOREPLICAS", "MISCONF":
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return fmt.Errorf("redisstore: %w", err)
	}
	// Anything else is the transport: refused, reset, timed out, pool
	// exhausted.
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// ceilDiv returns ⌈d/unit⌉ for d ≥ 0.
func ceilDiv(d, unit time.Duration) int64 {
	q := d / unit
	if d%unit != 0 {
		q++
	}
	return int64(q)
}

func msArg(d time.Duration) string { return strconv.FormatInt(ceilDiv(d, time.Millisecond), 10) }
func usArg(d time.Duration) string { return strconv.FormatInt(ceilDiv(d, time.Microsecond), 10) }

// us converts a script's microseconds to a Duration.
func us(n int64) time.Duration { return scale(n, time.Microsecond) }

// ms converts a PTTL's milliseconds to a Duration.
func ms(p int64) time.Duration { return scale(p, time.Millisecond) }

// scale returns n units, saturating at the longest (and the most
// negative) Duration: the backend writes no TTL over store.MaxTTL, but a
// key's PTTL set by something else (PEXPIRE by hand) may be more than a
// Duration holds, and must not wrap to a negative one.
func scale(n int64, unit time.Duration) time.Duration {
	switch {
	case n > math.MaxInt64/int64(unit):
		return math.MaxInt64
	case n < math.MinInt64/int64(unit):
		return math.MinInt64
	}
	return time.Duration(n) * unit
}

// reply reads a script's reply. The first element that is missing or not
// of the type asked for sets err (unexpected), and every read after it
// returns a zero value: a reply the backend cannot read is never taken for
// an answer.
type reply struct {
	v   any
	s   []any
	err error
}

// unexpected reports a script reply the backend cannot read: the script
// may or may not have run (a proxy in between, a server that is not
// Redis), so it matches store.ErrUnavailable.
func unexpected(v any) error {
	return fmt.Errorf("%w: redisstore: unexpected script reply %T %v", store.ErrUnavailable, v, v)
}

// readReply returns v as an array of at least n elements, or an error: a
// reply {-1} is a decision's report of a key it did not write
// (store.ErrCorrupt).
func readReply(v any, n int) (*reply, error) {
	s, ok := v.([]any)
	if !ok || len(s) < 1 {
		return nil, unexpected(v)
	}
	if x, ok := s[0].(int64); ok && x == -1 && len(s) == 1 {
		return nil, fmt.Errorf("%w: a decision's key holds a value it did not write", store.ErrCorrupt)
	}
	if len(s) < n {
		return nil, unexpected(v)
	}
	return &reply{v: v, s: s}, nil
}

func (r *reply) fail() {
	if r.err == nil {
		r.err = unexpected(r.v)
	}
}

func (r *reply) at(i int) any {
	if r.err != nil || i >= len(r.s) {
		r.fail()
		return nil
	}
	return r.s[i]
}

// int reads element i, an integer.
func (r *reply) int(i int) int64 {
	x, ok := r.at(i).(int64)
	if !ok {
		r.fail()
	}
	return x
}

// bool reads element i, 0 or 1.
func (r *reply) bool(i int) bool {
	x := r.int(i)
	if x != 0 && x != 1 {
		r.fail()
	}
	return x == 1
}

// str reads element i, a string.
func (r *reply) str(i int) string {
	x, ok := r.at(i).(string)
	if !ok {
		r.fail()
	}
	return x
}

// uint reads element i, a base-10 unsigned integer as a string.
func (r *reply) uint(i int) uint64 {
	n, err := strconv.ParseUint(r.str(i), 10, 64)
	if err != nil {
		r.fail()
	}
	return n
}

// us reads element i, microseconds.
func (r *reply) us(i int) time.Duration { return us(r.int(i)) }

// readVersion reads a version, a reply that is a base-10 integer > 0.
func readVersion(v any) (uint64, error) {
	s, _ := v.(string)
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, unexpected(v)
	}
	return n, nil
}

// readBool reads a reply that is 0 or 1.
func readBool(v any) (bool, error) {
	x, ok := v.(int64)
	if !ok || x != 0 && x != 1 {
		return false, unexpected(v)
	}
	return x == 1, nil
}

// Now implements store.Backend: the server's TIME.
func (b *Backend) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	t, err := b.c.Time(ctx).Result()
	if err != nil {
		return time.Time{}, b.fail(ctx, err)
	}
	return t, nil
}

// Get implements store.Backend.
func (b *Backend) Get(ctx context.Context, key string) (store.Item, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Item{}, false, err
	}
	if len(key) > b.maxKey || store.Reserved(key) {
		return store.Item{}, false, nil
	}
	v, err := b.run(ctx, getScript, []string{b.key(key)})
	if err != nil || v == nil {
		return store.Item{}, false, err
	}
	r, err := readReply(v, 3)
	if err != nil {
		return store.Item{}, false, err
	}
	it := store.Item{Value: []byte(r.str(0)), Version: r.uint(1), TTL: store.NoTTL}
	if p := r.int(2); p >= 0 {
		it.TTL = ms(p)
	}
	if r.err == nil && it.Version == 0 {
		r.fail()
	}
	if r.err != nil {
		return store.Item{}, false, r.err
	}
	return it, true, nil
}

// Set implements store.Backend.
func (b *Backend) Set(ctx context.Context, key string, value []byte, o store.SetOptions) (uint64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if err := b.checkKey(key); err != nil {
		return 0, false, err
	}
	if err := o.Validate(); err != nil {
		return 0, false, err
	}
	absent := "0"
	if o.IfAbsent {
		absent = "1"
	}
	ttl := "none"
	if o.TTL != store.NoTTL {
		ttl = msArg(o.TTL)
	}
	k := b.key(key)
	v, err := b.run(ctx, setScript, []string{k, b.counter(k)},
		value, ttl, absent, strconv.FormatUint(o.IfVersion, 10))
	if err != nil || v == nil {
		return 0, false, err
	}
	ver, err := readVersion(v)
	if err != nil {
		return 0, false, err
	}
	return ver, true, nil
}

// CompareAndDelete implements store.Backend.
func (b *Backend) CompareAndDelete(ctx context.Context, key string, version uint64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if version == 0 || len(key) > b.maxKey || store.Reserved(key) {
		return false, nil
	}
	v, err := b.run(ctx, delScript, []string{b.key(key)}, strconv.FormatUint(version, 10))
	if err != nil {
		return false, err
	}
	return readBool(v)
}

// Delete implements store.Backend.
func (b *Backend) Delete(ctx context.Context, key string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if len(key) > b.maxKey || store.Reserved(key) {
		return false, nil
	}
	v, err := b.run(ctx, delScript, []string{b.key(key)}, "0")
	if err != nil {
		return false, err
	}
	return readBool(v)
}
