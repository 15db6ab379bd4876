// Package lease provides leases with fencing tokens: a lock with a TTL
// held in a store.Backend, handed out with a token that strictly increases
// across acquisitions, and a Resource helper that rejects writes carrying a
// token older than the highest it has accepted.
//
// # A lease alone is an efficiency lock
//
// A holder can pause (GC, swap, a stopped VM) past its lease's expiry and
// then act as if it still held it, while another holder has acquired the
// lease. No lease protocol prevents that. Correctness needs the token
// checked downstream: every write to the protected resource carries the
// token, and the resource rejects tokens older than the highest it has seen
// (Resource does exactly that). SafeContext narrows the window further by
// cancelling work before the lease can have expired, but it is an
// optimisation, not a guarantee.
//
// # TTL kind
//
// Absolute, renewable: a lease expires TTL after its acquisition or last
// renewal (the store's clock decides). Renew extends it only for the
// holder with the matching token.
//
// # Fencing tokens
//
// Tokens come from a counter key next to the lease ("…{name}:fence"),
// written atomically with the acquisition (one store decision), pinned
// (never evicted) and without TTL (never expires), so it never goes
// backwards while the store lives: not when a lease expires, not under
// memory pressure.
//
// The embedded engine with a durability log (engine.Config.Durability)
// keeps the counter across restarts and crashes, so tokens stay monotonic
// without a Floor under every fsync policy: the acquisition that raises
// the counter is fsynced before Acquire returns (engine.Op.Sync) even
// under SyncEverySecond or SyncNo, whose other writes an OS crash or power
// loss may lose (see docs/DURABILITY.md). Each Acquire then costs one
// fsync, shared with concurrent writers.
//
// Across a restart of a non-durable store (the embedded engine without a
// log loses its data with the process), set Config.Floor: the next token is
// max(counter+1, Floor(name)). Two floors are provided and tested:
// ClockFloor (the store's clock in microseconds — monotone across restarts
// as long as the store's clock does not step back and fewer than one lease
// per microsecond is taken on average) and, best, the resource's own
// durable memory: Floor returning Resource.Highest()+1 read from wherever
// the resource persists it. A Redis backend with persistence keeps the
// counter itself.
//
// # Eviction
//
// Lease records and fence counters are pinned on the embedded engine; on
// Redis they must live under a noeviction or volatile-* policy. If a lease
// record were lost anyway, a second holder could acquire early — the case
// fencing already covers.
//
// # Store failure
//
// Acquire, Renew and Release return the store's error, and report it to
// Config.Logger and Config.OnError with the lease's name. A holder whose
// Renew fails must assume the lease lapses at its deadline: SafeContext
// still cancels in time. A call whose context ends before the store
// answers returns the context's cause and is not reported (it is not a
// store failure); as after a store failure, a remote store may or may not
// have applied it.
package lease

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/usecases/internal/keys"
	"github.com/tidekv/tide/usecases/internal/report"
	"github.com/tidekv/tide/usecases/store"
)

// Backend is what a Manager needs of a store: its decision. store.Backend
// implementations (embedded, redisstore) satisfy it.
type Backend interface {
	Lease(ctx context.Context, d *store.Lease) error
}

// Config configures a Manager.
type Config struct {
	// Backend holds the leases. Required.
	Backend Backend
	// TTL is the lease duration. 0 means 10 seconds; at least MinTTL, at
	// most store.MaxTTL, and long enough to leave a safe time after Drift
	// and Margin (see Margin).
	TTL time.Duration
	// Prefix is prepended to every key. "" means "tide:lease:". Every
	// adapter checks its Prefix by one rule, and New refuses a Prefix
	// that breaks it with ErrInvalidConfig: 1 to 128 bytes of printable
	// ASCII without space; no '{' (the lease's name is the Redis Cluster
	// hash tag of its record and fence counter, which one decision writes
	// together; a brace in the prefix would take the tag away from the
	// name, and with "{}" put the two keys in different slots); and no
	// overlap with another adapter's default key space ("tide:sess:",
	// "tide:flag:", "tide:rl:", "tide:idem:", "tide:cache:") or the Redis
	// backend's "tide:ver:": the Prefix is neither a prefix of one nor
	// begins with one ("tide:" is refused). Adapters sharing a backend
	// need prefixes neither of which is a prefix of the other.
	Prefix string
	// Floor, if set, returns the least token the next acquisition of name
	// may get (see the package documentation). nil means no floor.
	Floor func(ctx context.Context, name string) (uint64, error)
	// Drift is the fraction of the TTL by which this process's clock may
	// run slow relative to the store's. 0 means 0.01 (1%); it must be
	// below 0.5.
	Drift float64
	// Margin is subtracted from every safe deadline on top of Drift. 0
	// means 5 ms; it must be ≥ 0. The safe budget of a fresh lease,
	// TTL·(1−Drift) − Margin (see SafeRemaining), must be positive: New
	// refuses a Margin ≥ TTL·(1−Drift) (with the defaults: a TTL of about
	// 5 ms or less), which would leave a lease no safe time at all, every
	// SafeContext cancelled at birth.
	Margin time.Duration
	// LocalClock measures elapsed time in this process for SafeContext
	// (the store's clock cannot: it is elsewhere). nil means clock.Real,
	// which is monotonic.
	LocalClock clock.Clock
	// Logger receives a record for every store or Floor failure, with the
	// lease's name and the operation (the error is also returned), and
	// for every Renew that finds the lease lost. nil means none.
	Logger *slog.Logger
	// OnError, if set, is called with every store or Floor failure after
	// it is logged, with the lease's name. It must be safe for concurrent
	// use and should not block.
	OnError func(ctx context.Context, name string, err error)
}

// Lease is a held lease. Pass it back to Renew, Release and SafeContext.
// Renew, Release, SafeRemaining and SafeContext may be called on one Lease
// concurrently (a goroutine renewing it while the worker checks its safe
// deadline); Renew writes its TTL field only if the renewing Manager's TTL
// differs from it, so read TTL directly only while no such Renew runs.
type Lease struct {
	// Name is the lease's name; Holder identifies the holder.
	Name, Holder string
	// Token is the fencing token: pass it with every write to the
	// protected resource.
	Token uint64
	// TTL is the lease duration granted by the last acquire or renew.
	TTL time.Duration
	// g holds the last grant, replaced atomically by Renew; it is shared
	// by copies of the Lease. nil for a Lease made by hand until its first
	// successful Renew (which then writes g, not concurrency-safe).
	g *atomic.Pointer[grant]
}

// grant is what an acquire or renew granted: the lease cannot end before
// asked + ttl on the store's clock, where asked is the local clock reading
// taken before the request was sent.
type grant struct {
	asked int64
	ttl   time.Duration
}

// Info describes the current holder of a lease.
type Info struct {
	Holder string
	Token  uint64
	TTL    time.Duration // left
	// Fence is the highest token ever issued for this lease.
	Fence uint64
}

// Manager acquires, renews and releases leases. Create it with New; its
// zero value is not usable. It is safe for concurrent use and keeps no
// state of its own: each call is one store decision (one round trip on a
// remote backend), plus one Floor call per Acquire if set.
type Manager struct {
	cfg Config
	rep report.Reporter
}

const defaultPrefix = keys.LeasePrefix

// MinTTL is the shortest lease TTL New accepts: the coarsest TTL
// granularity of a supported backend (Redis counts TTLs in milliseconds
// and rounds a shorter one up), below which a lease's holder and its store
// would disagree on when it ends.
const MinTTL = time.Millisecond

// New returns a Manager for cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.Backend == nil:
		return nil, fmt.Errorf("%w: Backend is nil", ErrInvalidConfig)
	case cfg.TTL < 0 || cfg.TTL > store.MaxTTL || cfg.TTL > 0 && cfg.TTL < MinTTL:
		return nil, fmt.Errorf("%w: TTL = %v, want 0 (default) or %v..%v", ErrInvalidConfig, cfg.TTL, MinTTL, store.MaxTTL)
	case cfg.Drift < 0 || cfg.Drift >= 0.5 || cfg.Drift != cfg.Drift:
		return nil, fmt.Errorf("%w: Drift = %v, want 0 ≤ Drift < 0.5", ErrInvalidConfig, cfg.Drift)
	case cfg.Margin < 0:
		return nil, fmt.Errorf("%w: Margin = %v, want ≥ 0", ErrInvalidConfig, cfg.Margin)
	}
	if cfg.TTL == 0 {
		cfg.TTL = 10 * time.Second
	}
	if cfg.Prefix == "" {
		cfg.Prefix = defaultPrefix
	}
	if err := keys.CheckPrefix(cfg.Prefix, defaultPrefix); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if cfg.Drift == 0 {
		cfg.Drift = 0.01
	}
	if cfg.Margin == 0 {
		cfg.Margin = 5 * time.Millisecond
	}
	if budget := safeBudget(cfg.TTL, cfg.Drift, cfg.Margin); budget <= 0 {
		return nil, fmt.Errorf("%w: Margin %v ≥ TTL·(1−Drift) = %v·(1−%v): a lease would have no safe time (SafeRemaining ≤ 0 from its acquisition)",
			ErrInvalidConfig, cfg.Margin, cfg.TTL, cfg.Drift)
	}
	if cfg.LocalClock == nil {
		cfg.LocalClock = clock.Real{}
	}
	return &Manager{cfg: cfg, rep: report.Reporter{Logger: cfg.Logger, OnError: cfg.OnError}}, nil
}

func (m *Manager) keys(name string) (string, string) {
	k := m.cfg.Prefix + store.HashTag(name)
	return k, k + ":fence"
}

func (m *Manager) decide(ctx context.Context, op store.LeaseOp, name, holder string, token uint64, minToken uint64) (*store.Lease, error) {
	k, fk := m.keys(name)
	d := &store.Lease{Op: op, Key: k, FenceKey: fk, Holder: holder, Token: token, TTL: m.cfg.TTL, MinToken: minToken}
	if err := m.cfg.Backend.Lease(ctx, d); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx) // the caller went away: not a store failure
		}
		m.rep.Report(ctx, slog.LevelError, "tide: lease store failed", name, err, slog.String("op", leaseOpNames[op]))
		return nil, err
	}
	return d, nil
}

var leaseOpNames = [...]string{store.LeaseAcquire: "acquire", store.LeaseRenew: "renew", store.LeaseRelease: "release", store.LeaseInspect: "inspect"}

// Acquire takes the lease name for holder if it is free. It returns the
// lease and true, or the current holder's Info and false if it is held
// (by anyone, holder included: use Renew to extend).
func (m *Manager) Acquire(ctx context.Context, name, holder string) (*Lease, Info, bool, error) {
	if name == "" || holder == "" {
		return nil, Info{}, false, fmt.Errorf("%w: name %q, holder %q", ErrInvalidName, name, holder)
	}
	var floor uint64
	if m.cfg.Floor != nil {
		f, err := m.cfg.Floor(ctx, name)
		if err != nil && ctx.Err() != nil {
			return nil, Info{}, false, context.Cause(ctx)
		}
		if err != nil {
			m.rep.Report(ctx, slog.LevelError, "tide: lease floor failed", name, err, slog.String("op", "acquire"))
			return nil, Info{}, false, err
		}
		floor = f
	}
	asked := m.cfg.LocalClock.Now()
	d, err := m.decide(ctx, store.LeaseAcquire, name, holder, 0, floor)
	if err != nil {
		return nil, Info{}, false, err
	}
	info := Info{Holder: d.Current.Holder, Token: d.Current.Token, TTL: d.Current.TTL, Fence: d.Fence}
	if !d.OK {
		return nil, info, false, nil
	}
	l := &Lease{Name: name, Holder: holder, Token: d.Current.Token, TTL: m.cfg.TTL, g: new(atomic.Pointer[grant])}
	l.g.Store(&grant{asked: asked, ttl: m.cfg.TTL})
	return l, info, true, nil
}

// Renew extends l to the configured TTL from now and reports whether l was
// still held (false: it expired or was released; stop using it).
func (m *Manager) Renew(ctx context.Context, l *Lease) (bool, error) {
	if l == nil {
		return false, fmt.Errorf("%w: nil lease", ErrInvalidName)
	}
	asked := m.cfg.LocalClock.Now()
	d, err := m.decide(ctx, store.LeaseRenew, l.Name, l.Holder, l.Token, 0)
	if err != nil {
		return false, err
	}
	if !d.OK {
		if m.cfg.Logger != nil {
			m.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "tide: lease lost before renewal", slog.String("key", l.Name), slog.Uint64("token", l.Token))
		}
		return false, nil
	}
	if l.g == nil { // a Lease made by hand (say, restored after a restart)
		l.g = new(atomic.Pointer[grant])
	}
	l.g.Store(&grant{asked: asked, ttl: m.cfg.TTL})
	if l.TTL != m.cfg.TTL {
		l.TTL = m.cfg.TTL
	}
	return true, nil
}

// Release frees l and reports whether it was still held.
func (m *Manager) Release(ctx context.Context, l *Lease) (bool, error) {
	if l == nil {
		return false, fmt.Errorf("%w: nil lease", ErrInvalidName)
	}
	d, err := m.decide(ctx, store.LeaseRelease, l.Name, l.Holder, l.Token, 0)
	if err != nil {
		return false, err
	}
	return d.OK, nil
}

// Inspect reports the current holder of name; ok is false if the lease is
// free. Info.Fence is reported either way. An empty name is
// ErrInvalidName, as for Acquire.
func (m *Manager) Inspect(ctx context.Context, name string) (Info, bool, error) {
	if name == "" {
		return Info{}, false, fmt.Errorf("%w: empty name", ErrInvalidName)
	}
	d, err := m.decide(ctx, store.LeaseInspect, name, "", 0, 0)
	if err != nil {
		return Info{}, false, err
	}
	return Info{Holder: d.Current.Holder, Token: d.Current.Token, TTL: d.Current.TTL, Fence: d.Fence}, d.OK, nil
}

// SafeRemaining returns how long l may still be relied on from this
// process's point of view: the lease cannot end before asked + TTL on the
// store's clock, where asked is when the granting request was sent; with
// the local clock running up to Drift slower, and a fixed Margin, the safe
// budget is TTL·(1−Drift) − Margin − (time elapsed since asked). It is ≤ 0
// once the lease may have expired, and never more than TTL·(1−Drift) −
// Margin, even if LocalClock goes backwards (only a monotonic clock, such
// as clock.Real, measures the elapsed time right).
func (m *Manager) SafeRemaining(l *Lease) time.Duration {
	if l == nil {
		return 0
	}
	g := grant{ttl: l.TTL} // a Lease not made by Acquire: asked unknown, 0
	if l.g != nil {
		g = *l.g.Load()
	}
	budget := safeBudget(g.ttl, m.cfg.Drift, m.cfg.Margin)
	// A local clock that went back reads a negative elapsed time: count
	// it as none, never as more time left than the lease was granted.
	return budget - time.Duration(max(m.cfg.LocalClock.Now()-g.asked, 0))
}

// safeBudget is how long a lease granted for ttl may be relied on from the
// moment its request was sent: ttl·(1−drift) − margin.
func safeBudget(ttl time.Duration, drift float64, margin time.Duration) time.Duration {
	return time.Duration(float64(ttl)*(1-drift)) - margin
}

// SafeContext returns a context that is cancelled when parent is, or when
// l may have expired (SafeRemaining reaches 0), whichever is first. Renew
// does not move its deadline: take a new SafeContext after renewing. The
// deadline uses the real timer, so with a manual LocalClock only
// SafeRemaining is meaningful.
func (m *Manager) SafeContext(parent context.Context, l *Lease) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, max(m.SafeRemaining(l), 0))
}

// ClockFloor returns a Config.Floor that floors tokens at the store's clock
// in microseconds since the Unix epoch (one extra Now call per Acquire).
func ClockFloor(b store.Backend) func(context.Context, string) (uint64, error) {
	return func(ctx context.Context, _ string) (uint64, error) {
		now, err := b.Now(ctx)
		if err != nil {
			return 0, err
		}
		return uint64(max(now.UnixMicro(), 0)), nil
	}
}
