package embedded_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidekv/tide/clock"
	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
	"github.com/tidekv/tide/usecases/store/embedded"
)

func newRapidBackend(t *rapid.T) (*embedded.Backend, *clock.Manual, func()) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := engine.New(engine.Config{Clock: clk, ExpiryInterval: -1, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := embedded.New(embedded.Config{Engine: e, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return b, clk, func() { e.Close() }
}

// TestTokenBucketModel checks the GCRA decision against the textbook token
// bucket: a level of tokens (in nanoseconds of refill) that fills at one
// token per interval up to the capacity.
func TestTokenBucketModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, clk, done := newRapidBackend(t)
		defer done()
		capacity := rapid.Int64Range(1, 10).Draw(t, "capacity")
		interval := time.Duration(rapid.Int64Range(1, 1000).Draw(t, "interval_ms")) * time.Millisecond
		burst := capacity * int64(interval)
		level, last := burst, clk.Now()
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			clk.Advance(time.Duration(rapid.Int64Range(0, 3*int64(interval/time.Millisecond)).Draw(t, "advance_ms")) * time.Millisecond)
			cost := rapid.Int64Range(0, capacity).Draw(t, "cost")
			now := clk.Now()
			level = min(burst, level+(now-last))
			last = now
			want := store.TokenBucket{Allowed: level >= cost*int64(interval)}
			if want.Allowed {
				level -= cost * int64(interval)
			} else {
				want.RetryAfter = time.Duration(cost*int64(interval) - level)
			}
			want.Remaining = level / int64(interval)
			want.Reset = time.Duration(burst - level)
			d := &store.TokenBucket{Key: "k", Capacity: capacity, Interval: interval, Cost: cost}
			if err := b.TokenBucket(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if d.Allowed != want.Allowed || d.Remaining != want.Remaining || d.RetryAfter != want.RetryAfter || d.Reset != want.Reset {
				t.Fatalf("step %d (cost %d): got allowed %v remaining %d retry %v reset %v, want %v %d %v %v",
					i, cost, d.Allowed, d.Remaining, d.RetryAfter, d.Reset, want.Allowed, want.Remaining, want.RetryAfter, want.Reset)
			}
		}
	})
}

// TestWindowModels checks the fixed and sliding windows against direct
// models: a counter with an end time, and a list of admission times.
func TestWindowModels(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, clk, done := newRapidBackend(t)
		defer done()
		limit := rapid.Int64Range(1, 8).Draw(t, "limit")
		window := time.Duration(rapid.Int64Range(1, 20).Draw(t, "window_s")) * time.Second
		var count int64
		var end int64 // fixed window end; 0: none
		var log []int64
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			clk.Advance(time.Duration(rapid.Int64Range(0, 5000).Draw(t, "advance_ms")) * time.Millisecond)
			cost := rapid.Int64Range(0, limit).Draw(t, "cost")
			now := clk.Now()

			// Fixed window model.
			if end != 0 && now >= end {
				count, end = 0, 0
			}
			var fw store.FixedWindow
			if count+cost <= limit {
				fw.Allowed = true
				if cost > 0 {
					if end == 0 {
						end = now + int64(window)
					}
					count += cost
				}
				fw.Remaining = limit - count
				if end != 0 {
					fw.Reset = time.Duration(end - now)
				}
			} else {
				fw.Remaining = limit - count
				fw.Reset = time.Duration(end - now)
				fw.RetryAfter = fw.Reset
			}
			d := &store.FixedWindow{Key: "fw", Limit: limit, Window: window, Cost: cost}
			if err := b.FixedWindow(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if d.Allowed != fw.Allowed || d.Remaining != fw.Remaining || d.RetryAfter != fw.RetryAfter || d.Reset != fw.Reset {
				t.Fatalf("fixed step %d (cost %d): got %v %d %v %v, want %v %d %v %v", i, cost,
					d.Allowed, d.Remaining, d.RetryAfter, d.Reset, fw.Allowed, fw.Remaining, fw.RetryAfter, fw.Reset)
			}

			// Sliding window model.
			log = slices.DeleteFunc(log, func(ts int64) bool { return ts <= now-int64(window) })
			n := int64(len(log))
			var sw store.SlidingWindow
			if n+cost <= limit {
				sw.Allowed = true
				for range cost {
					log = append(log, now)
				}
				sw.Remaining = limit - n - cost
			} else {
				sw.Remaining = limit - n
				sw.RetryAfter = time.Duration(log[n+cost-limit-1] + int64(window) - now)
			}
			if len(log) > 0 {
				sw.Reset = time.Duration(log[len(log)-1] + int64(window) - now)
			}
			s := &store.SlidingWindow{Key: "sw", Limit: limit, Window: window, Cost: cost}
			if err := b.SlidingWindow(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if s.Allowed != sw.Allowed || s.Remaining != sw.Remaining || s.RetryAfter != sw.RetryAfter || s.Reset != sw.Reset {
				t.Fatalf("sliding step %d (cost %d): got %v %d %v %v, want %v %d %v %v", i, cost,
					s.Allowed, s.Remaining, s.RetryAfter, s.Reset, sw.Allowed, sw.Remaining, sw.RetryAfter, sw.Reset)
			}
		}
	})
}

// TestLeaseModel checks the lease decision against a model: one lease with
// a holder, a token and an expiry time, and a fence that only grows.
func TestLeaseModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, clk, done := newRapidBackend(t)
		defer done()
		ttl := time.Duration(rapid.Int64Range(1, 10).Draw(t, "ttl_s")) * time.Second
		holders := []string{"a", "b", "c"}
		var holder string
		var token, fence uint64
		var expiry int64
		for i := range rapid.IntRange(1, 80).Draw(t, "steps") {
			clk.Advance(time.Duration(rapid.Int64Range(0, 4000).Draw(t, "advance_ms")) * time.Millisecond)
			now := clk.Now()
			if holder != "" && now >= expiry {
				holder = ""
			}
			op := store.LeaseOp(rapid.IntRange(0, 3).Draw(t, "op"))
			who := rapid.SampledFrom(holders).Draw(t, "who")
			tok := token
			if rapid.Bool().Draw(t, "wrong_token") {
				tok++
			}
			minTok := uint64(0)
			if rapid.IntRange(0, 9).Draw(t, "floor") == 0 {
				minTok = fence + uint64(rapid.IntRange(0, 5).Draw(t, "floor_by"))
			}
			var wantOK bool
			switch op {
			case store.LeaseAcquire:
				if holder == "" {
					wantOK = true
					fence = max(fence+1, minTok)
					holder, token, expiry = who, fence, now+int64(ttl)
				}
			case store.LeaseRenew:
				if holder != "" && holder == who && tok == token {
					wantOK, expiry = true, now+int64(ttl)
				}
			case store.LeaseRelease:
				if holder != "" && holder == who && tok == token {
					wantOK, holder = true, ""
				}
			case store.LeaseInspect:
				wantOK = holder != ""
			}
			d := &store.Lease{Op: op, Key: "{l}", FenceKey: "{l}:fence", Holder: who, Token: tok, TTL: ttl, MinToken: minTok}
			if err := b.Lease(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if d.OK != wantOK || d.Fence != fence || d.Current.Holder != holder || (holder != "" && (d.Current.Token != token || d.Current.TTL != time.Duration(expiry-now))) {
				t.Fatalf("step %d op %d by %s/%d: got ok %v fence %d current %+v, want ok %v fence %d holder %q token %d ttl %v",
					i, op, who, tok, d.OK, d.Fence, d.Current, wantOK, fence, holder, token, time.Duration(expiry-now))
			}
		}
	})
}

// TestIdempotencyModel checks the idempotency decision against a model of
// the record: state, fingerprint, owner, lease end and retention end.
func TestIdempotencyModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, clk, done := newRapidBackend(t)
		defer done()
		lease := time.Duration(rapid.Int64Range(1, 5).Draw(t, "lease_s")) * time.Second
		retention := lease * time.Duration(rapid.Int64Range(1, 4).Draw(t, "retention_x"))
		type rec struct {
			live      bool
			completed bool
			fp, owner string
			leaseEnd  int64
			end       int64
			result    string
		}
		var r rec
		for i := range rapid.IntRange(1, 80).Draw(t, "steps") {
			clk.Advance(time.Duration(rapid.Int64Range(0, 3000).Draw(t, "advance_ms")) * time.Millisecond)
			now := clk.Now()
			if r.live && now >= r.end {
				r = rec{}
			}
			op := store.IdemOp(rapid.IntRange(0, 3).Draw(t, "op"))
			owner := rapid.SampledFrom([]string{"o1", "o2", "o3"}).Draw(t, "owner")
			fp := rapid.SampledFrom([]string{"f1", "f2"}).Draw(t, "fp")
			result := rapid.SampledFrom([]string{"r1", "r2"}).Draw(t, "result")
			var want store.IdemOutcome
			var wantRes, wantPrev, wantHolder string
			switch {
			case !r.live:
				want = store.IdemAbsent
				if op == store.IdemClaim {
					want = store.IdemClaimed
					r = rec{live: true, fp: fp, owner: owner, leaseEnd: now + int64(lease), end: now + int64(retention)}
				}
			case r.completed:
				want, wantRes = store.IdemCompleted, r.result
				if op == store.IdemClaim && fp != r.fp {
					want, wantRes = store.IdemMismatch, ""
				}
			case op == store.IdemInspect:
				want, wantHolder = store.IdemInProgress, r.owner
			case op == store.IdemClaim:
				switch {
				case fp != r.fp:
					want = store.IdemMismatch
				case now < r.leaseEnd:
					want, wantHolder = store.IdemInProgress, r.owner
				default:
					want, wantPrev = store.IdemRecovered, r.owner
					r.owner, r.leaseEnd = owner, now+int64(lease)
				}
			case owner != r.owner:
				want, wantHolder = store.IdemNotOwner, r.owner
			case op == store.IdemRelease:
				want = store.IdemReleased
				r = rec{}
			default: // complete
				want, wantRes = store.IdemCompleted, result
				r.completed, r.result = true, result
			}
			d := &store.Idempotency{Op: op, Key: "{i}", Fingerprint: []byte(fp), Owner: owner, Lease: lease, Retention: retention, Result: []byte(result)}
			if op == store.IdemInspect {
				d.Owner = ""
			}
			if err := b.Idempotency(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if d.Outcome != want || string(d.StoredResult) != wantRes || d.PrevOwner != wantPrev || d.Holder != wantHolder {
				t.Fatalf("step %d op %d owner %s fp %s: got (%v, %q, prev %q, holder %q), want (%v, %q, prev %q, holder %q)",
					i, op, owner, fp, d.Outcome, d.StoredResult, d.PrevOwner, d.Holder, want, wantRes, wantPrev, wantHolder)
			}
		}
	})
}
