package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/expiry"
)

// This file is the reference model shared by the engine targets: an input
// decoder, the model state, and the harness that runs one operation on both
// and compares.

// in decodes the fuzzer's bytes; past the end it yields zeros.
type in struct {
	b []byte
	i int
}

func (r *in) more() bool { return r.i < len(r.b) }

func (r *in) u8() byte {
	if r.i >= len(r.b) {
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *in) u64() uint64 {
	var v uint64
	for range 8 {
		v = v<<8 | uint64(r.u8())
	}
	return v
}

func (r *in) bytes(max int) []byte {
	n := min(int(r.u8())%(max+1), len(r.b)-r.i)
	out := r.b[r.i : r.i+n]
	r.i += n
	return out
}

var policies = []evict.Spec{
	evict.NoEviction,
	evict.AllKeysLRU, evict.AllKeysLFU, evict.AllKeysRandom,
	evict.VolatileLRU, evict.VolatileLFU, evict.VolatileRandom, evict.VolatileTTL,
}

// start is the manual clock's initial reading.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const maxKey = 16

// ment is a resident entry of the model (it may be due but unreclaimed).
type ment struct {
	val      []byte
	ver      uint64
	deadline int64
	pinned   bool
}

type harness struct {
	t        testing.TB
	e        *engine.Engine
	clk      *clock.Manual
	shards   int
	maxBytes int64 // the engine-wide cap (Config.MaxBytes); 0 = none
	pol      evict.Spec
	budget   int // expiry cycle count budget; 0 = default

	res     map[string]*ment  // resident entries, as the listener reports them
	lastVer map[string]uint64 // highest version ever seen per key
	events  []engine.Removal
	closed  bool
	hwm     int64 // the highest clock reading so far: the engine's time
	keys    []string
	step    int
	trace   []string
}

// newHarness builds an engine from the first bytes of r.
func newHarness(t testing.TB, r *in) *harness {
	h := &harness{t: t, res: map[string]*ment{}, lastVer: map[string]uint64{}}
	c := r.u8()
	h.shards = 1
	if c&1 != 0 {
		h.shards = 4
	}
	caps := []int64{0, 300, 500, 800, 1500, 3000, 0, 600}
	maxBytes := caps[(c>>1)%8] * int64(h.shards)
	h.pol = policies[int(c>>4)%len(policies)]
	budgets := []int{0, 1, 2, 5}
	h.budget = budgets[r.u8()%4]
	h.clk = clock.NewManual(start)
	h.hwm = h.clk.Now()
	e, err := engine.New(engine.Config{
		Shards:         h.shards,
		Clock:          h.clk,
		ExpiryInterval: -1,
		ExpiryBudget:   expiry.Budget{Count: h.budget},
		MaxKeySize:     maxKey,
		MaxBytes:       maxBytes,
		Policy:         h.pol,
		OnRemove:       func(rm engine.Removal) { h.events = append(h.events, rm) },
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.e = e
	e.Stats() // the engine reads the clock: its time starts at start
	h.maxBytes = maxBytes
	h.keys = []string{"", "a", "b", "c", "n", "key-5", "0123456789abcdef", "0123456789abcdefX"}
	h.logf("config shards=%d maxBytes=%d policy=%s budget=%d", h.shards, maxBytes, h.pol.Name, h.budget)
	return h
}

func (h *harness) logf(format string, args ...any) {
	h.trace = append(h.trace, fmt.Sprintf(format, args...))
	if len(h.trace) > 64 {
		h.trace = h.trace[len(h.trace)-64:]
	}
}

func (h *harness) failf(format string, args ...any) {
	h.t.Helper()
	var b bytes.Buffer
	for _, l := range h.trace {
		b.WriteString("  " + l + "\n")
	}
	h.t.Fatalf("step %d: %s\nlast operations:\n%s", h.step, fmt.Sprintf(format, args...), b.String())
}

// now is the engine's time: a clock that steps back reads as standing
// still until it passes the highest reading already seen (the engine's
// monotonic guard). verify reads the clock through the engine after every
// operation, so the engine has seen every reading the model has.
func (h *harness) now() int64 { return max(h.hwm, h.clk.Now()) }

func (h *harness) due(m *ment) bool { return m.deadline != 0 && h.now() >= m.deadline }

// live returns the visible entry for k, or nil.
func (h *harness) live(k string) *ment {
	m := h.res[k]
	if m == nil || h.due(m) {
		return nil
	}
	return m
}

func size(k string, v []byte) int64 { return int64(len(k)) + int64(len(v)) + engine.EntryOverhead }

func (h *harness) evictable(m *ment) bool {
	return h.pol.New != nil && !m.pinned && (!h.pol.Volatile || m.deadline != 0)
}

// unknownRoom reports whether the model cannot predict ErrOutOfMemory
// exactly (several capped shards: the model does not know the key→shard
// map, which decides where due entries are reclaimed first).
func (h *harness) unknownRoom() bool { return h.maxBytes > 0 && h.shards > 1 }

// roomErr predicts whether the engine finds room for need more bytes when
// the keys in fixed are being written or deleted (never evicted) and the
// keys in touched were looked up (a due one is reclaimed first). It returns
// ErrOutOfMemory or nil; with several capped shards it returns nil and the
// caller must accept either outcome.
func (h *harness) roomErr(need int64, fixed, touched []string) error {
	if h.maxBytes == 0 || h.shards > 1 {
		return nil
	}
	var base, nondue, pinned int64
	for k, m := range h.res {
		d := h.due(m)
		if d && slices.Contains(touched, k) {
			continue
		}
		sz := size(k, m.val)
		base += sz
		if d {
			continue
		}
		nondue += sz
		if !h.evictable(m) || slices.Contains(fixed, k) {
			pinned += sz
		}
	}
	switch {
	case base+need <= h.maxBytes, nondue+need <= h.maxBytes:
		return nil
	case h.pol.New == nil, pinned+need > h.maxBytes:
		return engine.ErrOutOfMemory
	}
	return nil
}

// tooLarge reports whether the engine can never store k and v: over the
// whole engine's cap (MaxBytes is one budget, whatever the shard count).
func (h *harness) tooLarge(k string, v []byte) bool {
	return h.maxBytes > 0 && size(k, v) > h.maxBytes
}

// opCtx says which removals the current operation may cause.
type opCtx struct {
	write    bool     // may reclaim due entries and evict to make room
	fixed    []string // never evicted by this operation
	deleting []string // may be removed with cause Deleted
	writing  []string // may be replaced
	failed   bool     // the operation returned an error: evict nothing
}

// drain checks the removals the last operation reported and applies them to
// the model. It returns how many Replaced events each key got.
func (h *harness) drain(c opCtx) map[string]int {
	h.t.Helper()
	replaced := map[string]int{}
	evs := h.events
	h.events = nil
	for _, ev := range evs {
		m := h.res[ev.Key]
		if m == nil {
			h.failf("removal %v of %q: not resident in the model", ev.Cause, ev.Key)
		}
		if ev.Version != m.ver || !bytes.Equal(ev.Value, m.val) {
			h.failf("removal %v of %q: version %d value %q, model has %d %q", ev.Cause, ev.Key, ev.Version, ev.Value, m.ver, m.val)
		}
		switch ev.Cause {
		case engine.CauseExpired:
			if !h.due(m) {
				h.failf("%q expired before its deadline (deadline %d, now %d)", ev.Key, m.deadline, h.now())
			}
			delete(h.res, ev.Key)
		case engine.CauseEvicted:
			switch {
			case !c.write || c.failed:
				h.failf("%q evicted by an operation that writes nothing (failed=%v)", ev.Key, c.failed)
			case slices.Contains(c.fixed, ev.Key):
				h.failf("%q evicted by a write to itself", ev.Key)
			case !h.evictable(m):
				h.failf("%q evicted but not evictable (pinned=%v deadline=%d policy=%s)", ev.Key, m.pinned, m.deadline, h.pol.Name)
			case h.due(m):
				h.failf("%q evicted while due (should have been reclaimed as expired)", ev.Key)
			}
			delete(h.res, ev.Key)
		case engine.CauseDeleted:
			if !slices.Contains(c.deleting, ev.Key) || h.due(m) {
				h.failf("%q deleted by an operation that does not delete it (due=%v)", ev.Key, h.due(m))
			}
			delete(h.res, ev.Key)
		case engine.CauseReplaced:
			if !slices.Contains(c.writing, ev.Key) || h.due(m) {
				h.failf("%q replaced by an operation that does not write it (due=%v)", ev.Key, h.due(m))
			}
			replaced[ev.Key]++
		default:
			h.failf("removal of %q with cause %v", ev.Key, ev.Cause)
		}
	}
	return replaced
}

func (h *harness) noteVersion(k string, v uint64) {
	if v <= h.lastVer[k] {
		h.failf("key %q got version %d, not above its earlier version %d (ABA)", k, v, h.lastVer[k])
	}
	h.lastVer[k] = v
}

// wantErr compares an error with a predicted sentinel (nil = success).
func (h *harness) wantErr(op string, got, want error) {
	h.t.Helper()
	if want == nil && got != nil || want != nil && !errors.Is(got, want) {
		h.failf("%s: error %v, want %v", op, got, want)
	}
}

// verify compares the whole engine with the model.
func (h *harness) verify() {
	h.t.Helper()
	if err := h.e.Check(); err != nil {
		h.failf("Check: %v", err)
	}
	if len(h.events) != 0 {
		h.failf("unexpected removals outside an operation: %v", h.events)
	}
	if !h.closed {
		var bytes int64
		due := 0
		for k, m := range h.res {
			bytes += size(k, m.val)
			if h.due(m) {
				due++
			}
		}
		st := h.e.Stats()
		// Due is exact, also for entries whose deadline moved later.
		if st.Entries != len(h.res) || st.Bytes != bytes || st.Due != due {
			h.failf("Stats entries=%d bytes=%d due=%d, model %d %d %d", st.Entries, st.Bytes, st.Due, len(h.res), bytes, due)
		}
		if n := h.e.Len(); n != len(h.res) {
			h.failf("Len %d, model %d", n, len(h.res))
		}
		if h.maxBytes > 0 && st.Bytes > h.maxBytes {
			h.failf("accounted bytes %d over the cap %d", st.Bytes, h.maxBytes)
		}
	}
	now := h.now()
	seen := map[string]bool{}
	for k, it := range h.e.Items() {
		if seen[k] {
			h.failf("Items yields %q twice", k)
		}
		seen[k] = true
		m := h.live(k)
		if m == nil {
			h.failf("Items yields %q = %q (v%d), model: absent or due", k, it.Value, it.Version)
		}
		h.sameItem("Items", k, it, m, now)
	}
	for k, m := range h.res {
		if !seen[k] && !h.due(m) {
			h.failf("model has live %q = %q (v%d, deadline %d), Items does not yield it", k, m.val, m.ver, m.deadline)
		}
	}
	h.drain(opCtx{}) // Items removes the due entries it passes
}

func (h *harness) sameItem(op, k string, it engine.Item, m *ment, now int64) {
	h.t.Helper()
	wantTTL := engine.NoTTL
	if m.deadline != 0 {
		wantTTL = time.Duration(m.deadline - now)
	}
	if !bytes.Equal(it.Value, m.val) || it.Version != m.ver || it.TTL != wantTTL || it.Pinned != m.pinned {
		h.failf("%s %q: got value %q v%d ttl %v pinned %v; model %q v%d ttl %v pinned %v",
			op, k, it.Value, it.Version, it.TTL, it.Pinned, m.val, m.ver, wantTTL, m.pinned)
	}
}

// ---- choosers ----

func (h *harness) key(r *in) string {
	c := r.u8()
	if int(c) < 240 {
		return h.keys[int(c)%len(h.keys)]
	}
	return string(r.bytes(maxKey + 2))
}

var fixedValues = [][]byte{
	nil, {}, []byte("v"), []byte("0"), []byte("1"), []byte("-1"), []byte("42"),
	[]byte("9223372036854775807"), []byte("-9223372036854775808"), []byte("9223372036854775808"),
	[]byte("007"), []byte("-0"), []byte(" 1"), []byte("+1"), []byte("abc"),
	bytes.Repeat([]byte("m"), 100), bytes.Repeat([]byte("L"), 400), bytes.Repeat([]byte("H"), 1400),
}

func (h *harness) value(r *in) []byte {
	c := r.u8()
	if int(c) < 200 {
		v := fixedValues[int(c)%len(fixedValues)]
		if v == nil {
			return nil
		}
		return append([]byte{}, v...) // the engine must copy; we scribble on it later
	}
	return append([]byte{}, r.bytes(40)...)
}

// ttlErr is the engine's rule for the TTL of a write (package engine, "TTL
// arguments"): positive or NoTTL; left 0 exactly when the write keeps the
// key's TTL (keep); 0 is never "no TTL".
func ttlErr(ttl time.Duration, keep bool) error {
	switch {
	case keep && ttl != 0:
		return engine.ErrInvalidOptions
	case keep, ttl > 0, ttl == engine.NoTTL:
		return nil
	}
	return engine.ErrInvalidTTL
}

// ttl chooses a duration: zero, negative, tiny, ordinary, huge, and the two
// sides of the clock's overflow boundary.
func (h *harness) ttl(r *in) time.Duration {
	now := h.now()
	switch c := r.u8(); c % 16 {
	case 0:
		return 0
	case 1:
		return -1
	case 2:
		return math.MinInt64
	case 3:
		return 1
	case 4:
		return time.Millisecond
	case 5:
		return time.Second
	case 6:
		return 10 * time.Second
	case 7:
		return time.Minute
	case 8:
		return time.Hour
	case 9:
		return math.MaxInt64
	case 10:
		return time.Duration(math.MaxInt64 - now) // deadline exactly MaxInt64
	case 11:
		return time.Duration(math.MaxInt64-now) + 1 // overflows by one
	case 12:
		return -time.Duration(r.u8()) * time.Second
	default:
		return time.Duration(r.u8()+1) * 250 * time.Millisecond
	}
}

func (h *harness) version(r *in, k string) uint64 {
	switch c := r.u8(); c % 8 {
	case 0:
		return 0
	case 1, 2, 3:
		if m := h.live(k); m != nil {
			return m.ver
		}
		return h.lastVer[k]
	case 4:
		return h.lastVer[k] // maybe stale (deleted, expired, replaced)
	case 5:
		return h.lastVer[h.keys[int(r.u8())%len(h.keys)]]
	case 6:
		return h.lastVer[k] + 1 // a version that never existed (yet)
	default:
		return math.MaxUint64
	}
}

// advance moves the clock forward (saturating at the end of int64 time).
func (h *harness) advance(r *in) {
	var d time.Duration
	switch c := r.u8(); c % 13 {
	case 0:
		d = 0
	case 1:
		d = 1
	case 2:
		d = 999 * time.Millisecond
	case 3:
		d = time.Second
	case 4:
		d = 10 * time.Second
	case 5:
		d = time.Hour
	case 6:
		d = 365 * 24 * time.Hour
	case 7:
		// to the very end of representable time
		h.clk.Set(time.Unix(0, math.MaxInt64-int64(r.u8())))
		h.hwm = h.now()
		h.logf("clock → end of time (%d)", h.now())
		return
	case 10:
		d = -time.Second // a faulty clock steps back
	case 11:
		d = -time.Duration(r.u8()) * time.Hour
	case 12:
		h.clk.Set(start) // back to the beginning
		h.logf("clock → start (engine time stays %d)", h.now())
		return
	default:
		d = time.Duration(r.u8()) * 100 * time.Millisecond
	}
	cur := h.clk.Now()
	switch {
	case d > 0 && cur > math.MaxInt64-int64(d):
		h.clk.Set(time.Unix(0, math.MaxInt64))
	case d < 0 && cur < math.MinInt64/2:
	default:
		h.clk.Advance(d)
	}
	h.hwm = h.now()
	h.logf("clock %+v → %d (engine time %d)", d, h.clk.Now(), h.now())
}

// ---- operations ----

func (h *harness) doSet(k string, v []byte, o engine.SetOptions, via string) {
	h.t.Helper()
	now := h.now()
	var want error
	var wantOK = true
	m := h.live(k)
	var deadline int64
	switch {
	case len(k) > maxKey:
		want = engine.ErrKeyTooLarge
	case ttlErr(o.TTL, o.KeepTTL && !o.TTLOnCreate) != nil:
		want = ttlErr(o.TTL, o.KeepTTL && !o.TTLOnCreate)
	case o.Only > engine.ConditionIfPresent || o.IfVersion != engine.AnyVersion && o.Only == engine.ConditionIfAbsent:
		want = engine.ErrInvalidOptions
	case h.closed:
		want = engine.ErrClosed
	case o.Only == engine.ConditionIfAbsent && m != nil, o.Only == engine.ConditionIfPresent && m == nil,
		o.IfVersion != engine.AnyVersion && (m == nil || m.ver != o.IfVersion):
		wantOK = false
	default:
		switch {
		case m != nil && (o.KeepTTL || o.TTLOnCreate):
			deadline = m.deadline
		case o.TTL > 0:
			if now > math.MaxInt64-int64(o.TTL) {
				want = engine.ErrInvalidTTL
			}
			deadline = now + int64(o.TTL)
		}
		if want == nil && h.tooLarge(k, v) {
			want = engine.ErrTooLarge
		}
		if want == nil {
			var old int64
			var fixed []string
			if m != nil {
				old = size(k, m.val)
				fixed = []string{k}
			}
			want = h.roomErr(size(k, v)-old, fixed, []string{k})
		}
	}
	if want != nil {
		wantOK = false
	}
	var ver uint64
	var ok bool
	var err error
	switch via {
	case "Set":
		ver, err = h.e.Set(k, v)
		ok = err == nil
	case "SetTTL":
		ver, err = h.e.SetTTL(k, v, o.TTL)
		ok = err == nil
	case "CompareAndSwap":
		ver, ok, err = h.e.CompareAndSwap(k, o.IfVersion, v)
	default:
		ver, ok, err = h.e.SetWith(k, v, o)
	}
	h.logf("%s(%q, %q, %+v) = %d %v %v", via, k, v, o, ver, ok, err)
	if want == nil && errors.Is(err, engine.ErrOutOfMemory) && h.unknownRoom() {
		want, wantOK = err, false
	}
	h.wantErr(via, err, want)
	if ok != wantOK {
		h.failf("%s: ok=%v, model %v", via, ok, wantOK)
	}
	rep := h.drain(opCtx{write: true, fixed: []string{k}, writing: []string{k}, failed: !ok})
	if !ok {
		if ver != 0 {
			h.failf("%s failed with version %d", via, ver)
		}
		if rep[k] != 0 {
			h.failf("%s failed but replaced %q", via, k)
		}
		return
	}
	if m != nil && rep[k] != 1 || m == nil && rep[k] != 0 {
		h.failf("%s: %d Replaced events for %q (existed=%v)", via, rep[k], k, m != nil)
	}
	h.noteVersion(k, ver)
	pinned := o.Pin
	if m != nil {
		pinned = pinned || m.pinned
	}
	h.res[k] = &ment{val: append([]byte{}, v...), ver: ver, deadline: deadline, pinned: pinned}
	for i := range v {
		v[i] ^= 0xff // the engine copied it
	}
}

// remove runs Delete, CompareAndDelete or GetAndDelete.
func (h *harness) doRemove(k string, ver uint64, via string) {
	m := h.live(k)
	want := m != nil && !h.closed && len(k) <= maxKey
	if via == "CompareAndDelete" && (ver == 0 || m == nil || m.ver != ver) {
		want = false
	}
	var got bool
	var val []byte
	switch via {
	case "Delete":
		got = h.e.Delete(k)
	case "CompareAndDelete":
		got = h.e.CompareAndDelete(k, ver)
	default:
		val, got = h.e.GetAndDelete(k)
	}
	h.logf("%s(%q, %d) = %v", via, k, ver, got)
	if got != want {
		h.failf("%s(%q): %v, model %v", via, k, got, want)
	}
	if via == "GetAndDelete" && got && !bytes.Equal(val, m.val) {
		h.failf("GetAndDelete(%q) = %q, model %q", k, val, m.val)
	}
	h.drain(opCtx{deleting: []string{k}})
	if got && h.res[k] != nil {
		h.failf("%s(%q) reported true without a Deleted event", via, k)
	}
}

func (h *harness) doRead(k string, via string) {
	m := h.live(k)
	if h.closed {
		m = nil
	}
	now := h.now()
	switch via {
	case "Get":
		v, ok := h.e.Get(k)
		h.logf("Get(%q) = %q %v", k, v, ok)
		if ok != (m != nil) || ok && !bytes.Equal(v, m.val) {
			h.failf("Get(%q) = %q %v, model %v", k, v, ok, m)
		}
		if ok && len(v) > 0 {
			v[0] ^= 0xff // must be a copy
		}
	case "AppendGet":
		v, ok := h.e.AppendGet([]byte("pre"), k)
		h.logf("AppendGet(%q) = %q %v", k, v, ok)
		want := []byte("pre")
		if m != nil {
			want = append(want, m.val...)
		}
		if ok != (m != nil) || !bytes.Equal(v, want) {
			h.failf("AppendGet(%q) = %q %v, model %q", k, v, ok, want)
		}
	case "GetItem":
		it, ok := h.e.GetItem(k)
		h.logf("GetItem(%q) = %+v %v", k, it, ok)
		if ok != (m != nil) {
			h.failf("GetItem(%q) ok=%v, model %v", k, ok, m != nil)
		}
		if ok {
			h.sameItem("GetItem", k, it, m, now)
		}
	case "TTL":
		d, ok := h.e.TTL(k)
		h.logf("TTL(%q) = %v %v", k, d, ok)
		want := engine.NoTTL
		if m != nil && m.deadline != 0 {
			want = time.Duration(m.deadline - now)
		}
		if ok != (m != nil) || ok && d != want {
			h.failf("TTL(%q) = %v %v, model %v %v", k, d, ok, want, m != nil)
		}
	}
	h.drain(opCtx{})
}

func (h *harness) doExpire(k string, ttl time.Duration, at *time.Time, cond engine.ExpireCondition) {
	now := h.now()
	var want error
	var d int64
	if at == nil {
		switch {
		case cond > engine.ExpireConditionLT:
			want = engine.ErrInvalidOptions
		case ttl <= 0:
			// A duration ≤ 0 (NoTTL included) is refused, never "due".
			want = engine.ErrInvalidTTL
		case len(k) > maxKey:
			want = engine.ErrKeyTooLarge
		case h.closed:
			want = engine.ErrClosed
		case now > math.MaxInt64-int64(ttl):
			want = engine.ErrInvalidTTL
		}
		d = now + int64(max(ttl, 0))
	} else {
		switch {
		case at.After(time.Unix(0, math.MaxInt64)):
			want = engine.ErrInvalidTTL
		case at.Before(time.Unix(0, math.MinInt64)):
			d = math.MinInt64 // long past: due
		default:
			d = at.UnixNano()
		}
	}
	if want == nil && cond > engine.ExpireConditionLT {
		want = engine.ErrInvalidOptions
	}
	if want == nil && len(k) > maxKey {
		want = engine.ErrKeyTooLarge
	}
	if want == nil && h.closed {
		want = engine.ErrClosed
	}
	m := h.live(k)
	done := false
	if want == nil && m != nil {
		cur := m.deadline
		switch cond {
		case engine.ExpireConditionAlways:
			done = true
		case engine.ExpireConditionNX:
			done = cur == 0
		case engine.ExpireConditionXX:
			done = cur != 0
		case engine.ExpireConditionGT:
			done = cur != 0 && d > cur
		case engine.ExpireConditionLT:
			done = cur == 0 || d < cur
		}
	}
	var got bool
	var err error
	if at == nil {
		got, err = h.e.Expire(k, ttl, cond)
		h.logf("Expire(%q, %v, %d) = %v %v", k, ttl, cond, got, err)
	} else {
		got, err = h.e.ExpireAt(k, *at, cond)
		h.logf("ExpireAt(%q, %v, %d) = %v %v", k, *at, cond, got, err)
	}
	h.wantErr("Expire", err, want)
	if got != done {
		h.failf("Expire(%q): done=%v, model %v (d=%d now=%d)", k, got, done, d, now)
	}
	h.drain(opCtx{deleting: []string{k}})
	if done {
		if d <= now {
			if h.res[k] != nil {
				h.failf("Expire(%q) with a due deadline did not delete it", k)
			}
		} else {
			m.deadline = d
		}
	}
}

func (h *harness) doGetAndExpire(k string, ttl time.Duration) {
	now := h.now()
	var want error
	m := h.live(k)
	switch {
	case ttl <= 0:
		want = engine.ErrInvalidTTL
	case len(k) > maxKey:
		want = engine.ErrKeyTooLarge
	case h.closed:
		want = engine.ErrClosed
	case now > math.MaxInt64-int64(ttl):
		want = engine.ErrInvalidTTL
	}
	it, ok, err := h.e.GetAndExpire(k, ttl)
	h.logf("GetAndExpire(%q, %v) = %+v %v %v", k, ttl, it, ok, err)
	h.wantErr("GetAndExpire", err, want)
	if want != nil {
		m = nil
	}
	if ok != (m != nil) {
		h.failf("GetAndExpire(%q) ok=%v, model %v", k, ok, m != nil)
	}
	h.drain(opCtx{})
	if ok {
		m.deadline = now + int64(ttl)
		h.sameItem("GetAndExpire", k, it, m, now)
	}
}

// keyOrClosedErr is the error of a call on k that checks only the key and
// the engine's state: ErrKeyTooLarge first, then ErrClosed.
func (h *harness) keyOrClosedErr(k string) error {
	switch {
	case len(k) > maxKey:
		return engine.ErrKeyTooLarge
	case h.closed:
		return engine.ErrClosed
	}
	return nil
}

func (h *harness) doPersist(k string) {
	m := h.live(k)
	want := m != nil && m.deadline != 0 && !h.closed && len(k) <= maxKey
	got, err := h.e.Persist(k)
	h.logf("Persist(%q) = %v, %v", k, got, err)
	h.wantErr("Persist", err, h.keyOrClosedErr(k))
	if got != want {
		h.failf("Persist(%q) = %v, model %v", k, got, want)
	}
	h.drain(opCtx{})
	if got {
		m.deadline = 0
	}
}

func (h *harness) doPin(k string, pin bool) {
	m := h.live(k)
	want := m != nil && !h.closed && len(k) <= maxKey
	got, err := h.e.Pin(k, pin)
	h.logf("Pin(%q, %v) = %v, %v", k, pin, got, err)
	h.wantErr("Pin", err, h.keyOrClosedErr(k))
	if got != want {
		h.failf("Pin(%q) = %v, model %v", k, got, want)
	}
	h.drain(opCtx{})
	if got {
		m.pinned = pin
	}
}

// canonical reports whether b is a base-10 int64 as the engine stores it.
func canonical(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != string(b) {
		return 0, false
	}
	return n, true
}

func (h *harness) doIncr(k string, delta int64, o engine.IncrOptions, via string) {
	now := h.now()
	var want error
	m := h.live(k)
	var n, deadline int64
	var nv []byte
	switch {
	case via == "DecrBy" && delta == math.MinInt64:
		want = engine.ErrOverflow
	case len(k) > maxKey:
		want = engine.ErrKeyTooLarge
	case ttlErr(o.TTL, false) != nil:
		want = engine.ErrInvalidTTL
	case h.closed:
		want = engine.ErrClosed
	default:
		d := delta
		if via == "DecrBy" {
			d = -delta
		}
		if m != nil {
			v, ok := canonical(m.val)
			if !ok {
				want = engine.ErrNotInteger
				break
			}
			n, deadline = v, m.deadline
		} else if o.TTL > 0 {
			if now > math.MaxInt64-int64(o.TTL) {
				want = engine.ErrInvalidTTL
				break
			}
			deadline = now + int64(o.TTL)
		}
		if d > 0 && n > math.MaxInt64-d || d < 0 && n < math.MinInt64-d {
			want = engine.ErrOverflow
			break
		}
		n += d
		nv = strconv.AppendInt(nil, n, 10)
		if h.tooLarge(k, nv) {
			want = engine.ErrTooLarge
			break
		}
		var old int64
		var fixed []string
		if m != nil {
			old = size(k, m.val)
			fixed = []string{k}
		}
		want = h.roomErr(size(k, nv)-old, fixed, []string{k})
	}
	var got int64
	var err error
	switch via {
	case "IncrBy":
		got, err = h.e.IncrBy(k, delta)
	case "DecrBy":
		got, err = h.e.DecrBy(k, delta)
	default:
		got, err = h.e.IncrWith(k, delta, o)
	}
	h.logf("%s(%q, %d, %+v) = %d %v", via, k, delta, o, got, err)
	if want == nil && errors.Is(err, engine.ErrOutOfMemory) && h.unknownRoom() {
		want = err
	}
	h.wantErr(via, err, want)
	rep := h.drain(opCtx{write: true, fixed: []string{k}, writing: []string{k}, failed: err != nil})
	if err != nil {
		return
	}
	if got != n {
		h.failf("%s(%q) = %d, model %d", via, k, got, n)
	}
	if m != nil && rep[k] != 1 || m == nil && rep[k] != 0 {
		h.failf("%s: %d Replaced events for %q (existed=%v)", via, rep[k], k, m != nil)
	}
	it, ok := h.e.GetItem(k)
	if !ok {
		h.failf("%s(%q) succeeded but the key is gone", via, k)
	}
	h.drain(opCtx{})
	h.noteVersion(k, it.Version)
	pinned := o.Pin // pins the key, as SetOptions.Pin does
	if m != nil {
		pinned = pinned || m.pinned
	}
	h.res[k] = &ment{val: nv, ver: it.Version, deadline: deadline, pinned: pinned}
	h.sameItem(via, k, it, h.res[k], now)
}

func (h *harness) doCycle() {
	now := h.now()
	var dues []int64
	for _, m := range h.res {
		if h.due(m) {
			dues = append(dues, m.deadline)
		}
	}
	slices.Sort(dues)
	n, more := h.e.RunExpiryCycle()
	h.logf("RunExpiryCycle() = %d %v (due %d)", n, more, len(dues))
	if h.closed {
		if n != 0 || more {
			h.failf("RunExpiryCycle after Close = %d %v", n, more)
		}
		return
	}
	want := len(dues)
	if h.budget > 0 {
		want = min(want, h.budget)
	}
	// A cycle may stop short of its budget (each shard pops a bounded
	// number of index items per batch), but then it must say more work
	// remains; it may also say so when only stale index items remain.
	if n > want || n < want && !more {
		h.failf("RunExpiryCycle removed %d (more=%v), model: %d due, budget %d", n, more, len(dues), h.budget)
	}
	if len(dues) > n && !more {
		h.failf("RunExpiryCycle: %d due left but more=false", len(dues)-n)
	}
	var got []int64
	for _, ev := range h.events {
		if ev.Cause == engine.CauseExpired && h.res[ev.Key] != nil {
			got = append(got, h.res[ev.Key].deadline)
		}
	}
	h.drain(opCtx{})
	if len(got) != n {
		h.failf("RunExpiryCycle removed %d but reported %d expirations", n, len(got))
	}
	// A budgeted cycle removes the earliest-deadline due entries.
	if h.shards == 1 {
		slices.Sort(got)
		if !slices.Equal(got, dues[:n]) {
			h.failf("RunExpiryCycle removed deadlines %v, not the earliest of %v", got, dues)
		}
	}
	_ = now
}

func (h *harness) doClose() {
	if err := h.e.Close(); err != nil {
		h.failf("Close: %v", err)
	}
	h.logf("Close()")
	h.closed = true
	h.res = map[string]*ment{}
	h.drain(opCtx{})
}

// doCommit runs a transaction of up to 3 preconditions and 3 ops.
func (h *harness) doCommit(r *in) {
	c := r.u8()
	var pre []engine.Precondition
	for range int(c % 4) {
		k := h.key(r)
		pre = append(pre, engine.Precondition{Key: k, Version: h.version(r, k)})
	}
	var ops []engine.Op
	for range int(c/4%4) + 1 {
		k := h.key(r)
		f := r.u8()
		op := engine.Op{Key: k, Delete: f%5 == 0, KeepTTL: f&8 != 0, Pin: f&16 != 0}
		if !op.KeepTTL {
			op.TTL = engine.NoTTL
		}
		if !op.Delete {
			op.Value = h.value(r)
		}
		if f&32 != 0 {
			op.TTL = h.ttl(r)
		}
		ops = append(ops, op)
	}
	h.commit(pre, ops)
}

func (h *harness) commit(pre []engine.Precondition, ops []engine.Op) {
	now := h.now()
	var want error
	wantOK := true
	var touched []string
	for _, p := range pre {
		touched = append(touched, p.Key)
		if len(p.Key) > maxKey && want == nil {
			want = engine.ErrKeyTooLarge
		}
	}
	seen := map[string]bool{}
	for _, op := range ops {
		touched = append(touched, op.Key)
		switch {
		case want != nil:
		case len(op.Key) > maxKey:
			want = engine.ErrKeyTooLarge
		case !op.Delete && ttlErr(op.TTL, op.KeepTTL) != nil:
			want = ttlErr(op.TTL, op.KeepTTL)
		case seen[op.Key]:
			want = engine.ErrInvalidOptions
		}
		seen[op.Key] = true
	}
	if want == nil && h.closed {
		want = engine.ErrClosed
	}
	if want == nil {
		for _, p := range pre {
			m := h.live(p.Key)
			if m == nil && p.Version != 0 || m != nil && m.ver != p.Version {
				wantOK = false
			}
		}
	}
	deadlines := make([]int64, len(ops))
	var fixed, deleting []string
	var need int64
	if want == nil && wantOK {
		for i, op := range ops {
			m := h.live(op.Key)
			if op.Delete {
				if m != nil {
					fixed = append(fixed, op.Key)
					deleting = append(deleting, op.Key)
					need -= size(op.Key, m.val) // deletes apply first: their room is the commit's
				}
				continue
			}
			switch {
			case op.KeepTTL && m != nil:
				deadlines[i] = m.deadline
			case op.TTL > 0:
				if now > math.MaxInt64-int64(op.TTL) {
					want = engine.ErrInvalidTTL
				}
				deadlines[i] = now + int64(op.TTL)
			}
			if want != nil {
				break
			}
			if h.tooLarge(op.Key, op.Value) {
				want = engine.ErrTooLarge
				break
			}
			grow := size(op.Key, op.Value)
			if m != nil {
				grow -= size(op.Key, m.val)
				fixed = append(fixed, op.Key)
			}
			need += grow // the commit needs room for its net change only
		}
		if want == nil {
			want = h.roomErr(need, fixed, touched)
		}
	}
	if want != nil {
		wantOK = false
	}
	olds := make([]*ment, len(ops))
	for i, op := range ops {
		olds[i] = h.live(op.Key)
	}
	vers, ok, err := h.e.Commit(pre, ops)
	h.logf("Commit(%+v, %+v) = %v %v %v", pre, ops, vers, ok, err)
	if want == nil && errors.Is(err, engine.ErrOutOfMemory) && h.unknownRoom() {
		want, wantOK = err, false
	}
	h.wantErr("Commit", err, want)
	if ok != wantOK {
		h.failf("Commit: committed=%v, model %v", ok, wantOK)
	}
	var writing []string
	for _, op := range ops {
		if !op.Delete {
			writing = append(writing, op.Key)
		}
	}
	rep := h.drain(opCtx{write: true, fixed: fixed, deleting: deleting, writing: writing, failed: !ok})
	if !ok {
		if len(rep) != 0 || len(vers) != 0 {
			h.failf("failed Commit replaced %v, returned versions %v", rep, vers)
		}
		for _, k := range deleting {
			if h.res[k] == nil {
				h.failf("failed Commit deleted %q", k)
			}
		}
		return
	}
	if len(vers) != len(ops) {
		h.failf("Commit returned %d versions for %d ops", len(vers), len(ops))
	}
	for i, op := range ops {
		m := olds[i]
		if op.Delete {
			if vers[i] != 0 {
				h.failf("Commit: delete of %q returned version %d", op.Key, vers[i])
			}
			if h.res[op.Key] != nil && m != nil {
				h.failf("Commit: delete of %q left it resident", op.Key)
			}
			continue
		}
		if m != nil && rep[op.Key] != 1 || m == nil && rep[op.Key] != 0 {
			h.failf("Commit: %d Replaced events for %q (existed=%v)", rep[op.Key], op.Key, m != nil)
		}
		h.noteVersion(op.Key, vers[i])
		pinned := op.Pin
		if m != nil {
			pinned = pinned || m.pinned
		}
		h.res[op.Key] = &ment{val: append([]byte{}, op.Value...), ver: vers[i], deadline: deadlines[i], pinned: pinned}
	}
}

// run decodes and runs operations until the input ends.
func (h *harness) run(r *in, pick func(r *in) int) {
	defer h.e.Close()
	defer watchdog(h)()
	for r.more() && h.step < 300 {
		h.step++
		h.op(pick(r), r)
		h.verify()
	}
	// A final close: everything must still behave.
	if !h.closed {
		h.doClose()
		h.verify()
	}
	h.doSet("a", []byte("x"), engine.SetOptions{TTL: engine.NoTTL}, "SetWith")
	h.doIncr("n", 1, engine.IncrOptions{TTL: engine.NoTTL}, "IncrWith")
	h.doRead("a", "Get")
	h.doRemove("a", 0, "Delete")
	h.doExpire("a", time.Second, nil, engine.ExpireConditionAlways)
	h.commit(nil, []engine.Op{{Key: "a", Value: []byte("y"), TTL: engine.NoTTL}})
	h.verify()
}

// watchdog crashes the process, with every goroutine's stack and the last
// operations, if one input runs for more than a minute: a hang (deadlock or
// endless loop) then becomes a crasher the fuzzer records, instead of a
// silent stall.
func watchdog(h *harness) (stop func()) {
	trace := func() string { return strings.Join(h.trace, "\n") }
	t := time.AfterFunc(time.Minute, func() {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		panic(fmt.Sprintf("fuzz input hangs at step %d\nlast operations:\n%s\n\n%s", h.step, trace(), buf))
	})
	return func() { t.Stop() }
}

// op runs operation number c (0..nOps-1) with arguments from r.
const nOps = 26

func (h *harness) op(c int, r *in) {
	switch c {
	case 0:
		h.doSet(h.key(r), h.value(r), engine.SetOptions{TTL: engine.NoTTL}, "Set")
	case 1:
		k, v := h.key(r), h.value(r)
		ttl := h.ttl(r)
		if ttl <= 0 { // SetTTL rejects ≤ 0, NoTTL included
			_, err := h.e.SetTTL(k, v, ttl)
			h.logf("SetTTL(%q, %v) = %v", k, ttl, err)
			h.wantErr("SetTTL", err, engine.ErrInvalidTTL)
			h.drain(opCtx{})
			return
		}
		h.doSet(k, v, engine.SetOptions{TTL: ttl}, "SetTTL")
	case 2, 3:
		k, v := h.key(r), h.value(r)
		f := r.u8()
		o := engine.SetOptions{KeepTTL: f&1 != 0, TTLOnCreate: f&2 != 0, Pin: f&4 != 0, Only: engine.Condition(f >> 3 % 4), TTL: engine.NoTTL}
		if o.KeepTTL && !o.TTLOnCreate {
			o.TTL = 0 // KeepTTL alone: the TTL is left unset
		}
		if f&32 != 0 {
			o.TTL = h.ttl(r)
		}
		if f&64 != 0 {
			o.IfVersion = h.version(r, k)
		}
		h.doSet(k, v, o, "SetWith")
	case 4:
		k := h.key(r)
		ver := h.version(r, k)
		v := h.value(r)
		if ver == engine.MustBeAbsent {
			// Matches no key; the key-length and closed rules apply.
			var want error
			switch {
			case len(k) > maxKey:
				want = engine.ErrKeyTooLarge
			case h.closed:
				want = engine.ErrClosed
			}
			_, ok, err := h.e.CompareAndSwap(k, engine.MustBeAbsent, v)
			h.logf("CompareAndSwap(%q, MustBeAbsent) = %v %v", k, ok, err)
			h.wantErr("CompareAndSwap", err, want)
			if ok {
				h.failf("CompareAndSwap(%q, MustBeAbsent) swapped", k)
			}
			return
		}
		h.doSet(k, v, engine.SetOptions{IfVersion: ver, KeepTTL: true}, "CompareAndSwap")
	case 5:
		k := h.key(r)
		h.doRemove(k, h.version(r, k), "CompareAndDelete")
	case 6:
		h.doRemove(h.key(r), 0, "Delete")
	case 7:
		h.doRemove(h.key(r), 0, "GetAndDelete")
	case 8:
		h.doGetAndExpire(h.key(r), h.ttl(r))
	case 9:
		k := h.key(r)
		h.doExpire(k, h.ttl(r), nil, engine.ExpireCondition(r.u8()%6))
	case 10:
		k := h.key(r)
		at := h.deadline(r)
		h.doExpire(k, 0, &at, engine.ExpireCondition(r.u8()%6))
	case 11:
		h.doPersist(h.key(r))
	case 12:
		h.doPin(h.key(r), r.u8()&1 != 0)
	case 13:
		h.doRead(h.key(r), "Get")
	case 14:
		h.doRead(h.key(r), "AppendGet")
	case 15:
		h.doRead(h.key(r), "GetItem")
	case 16:
		h.doRead(h.key(r), "TTL")
	case 17:
		k := h.key(r)
		f := r.u8()
		o := engine.IncrOptions{Pin: f&1 != 0, TTL: engine.NoTTL}
		if f&2 != 0 {
			o.TTL = h.ttl(r)
		}
		h.doIncr(k, h.delta(r), o, "IncrWith")
	case 18:
		h.doIncr(h.key(r), h.delta(r), engine.IncrOptions{TTL: engine.NoTTL}, "IncrBy")
	case 19:
		h.doIncr(h.key(r), h.delta(r), engine.IncrOptions{TTL: engine.NoTTL}, "DecrBy")
	case 20:
		h.doCommit(r)
	case 21, 22:
		h.advance(r)
	case 23:
		h.doCycle()
	case 24:
		// scribble on values handed out must not matter; a partial
		// iteration must release its locks.
		for k, v := range h.e.All() {
			_ = k
			if len(v) > 0 {
				v[0] ^= 1
			}
			break
		}
		h.drain(opCtx{})
	case 25:
		if r.u8() == 0xC1 { // rare: close mid-stream
			h.doClose()
		}
	}
}

func (h *harness) delta(r *in) int64 {
	switch c := r.u8(); c % 8 {
	case 0:
		return 1
	case 1:
		return -1
	case 2:
		return math.MaxInt64
	case 3:
		return math.MinInt64
	case 4:
		return 0
	case 5:
		return int64(r.u64())
	default:
		return int64(int8(r.u8()))
	}
}

// deadline chooses an absolute time for ExpireAt.
func (h *harness) deadline(r *in) time.Time {
	now := time.Unix(0, h.now())
	switch c := r.u8(); c % 8 {
	case 0:
		return now
	case 1:
		return now.Add(time.Duration(r.u8()) * time.Second)
	case 2:
		return now.Add(-time.Duration(r.u8()) * time.Second)
	case 3:
		return time.Unix(0, math.MaxInt64) // the last representable instant
	case 4:
		return time.Unix(0, math.MaxInt64).Add(time.Nanosecond) // one past it
	case 5:
		return time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	case 6:
		return time.Date(1500+int(r.u8()), 1, 1, 0, 0, 0, 0, time.UTC) // before int64 time
	default:
		return [...]time.Time{{}, time.Unix(0, 0), time.Unix(0, math.MinInt64), start}[r.u8()%4]
	}
}
