package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// limitReply parses the reply of the three limiter scripts: {allowed,
// remaining, retry_us, reset_us}.
func limitReply(v any) (allowed bool, remaining int64, retry, reset time.Duration, err error) {
	r, err := readReply(v, 4)
	if err != nil {
		return false, 0, 0, 0, err
	}
	allowed, remaining, retry, reset = r.bool(0), r.int(1), r.us(2), r.us(3)
	if r.err != nil {
		return false, 0, 0, 0, r.err
	}
	return allowed, remaining, retry, reset, nil
}

// TokenBucket implements store.Decisions.
func (b *Backend) TokenBucket(ctx context.Context, d *store.TokenBucket) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if d.Capacity > maxLuaInt/ceilDiv(d.Interval, time.Microsecond) { // Lua numbers are doubles
		return fmt.Errorf("%w: token bucket capacity %d, interval %v, cost %d", store.ErrInvalidArgument, d.Capacity, d.Interval, d.Cost)
	}
	if err := b.checkKey(d.Key); err != nil {
		return err
	}
	k := b.key(d.Key)
	v, err := b.run(ctx, tokenBucketScript, []string{k, b.counter(k)}, i64(d.Capacity), usArg(d.Interval), i64(d.Cost))
	if err != nil {
		return err
	}
	d.Allowed, d.Remaining, d.RetryAfter, d.Reset, err = limitReply(v)
	return err
}

// FixedWindow implements store.Decisions.
func (b *Backend) FixedWindow(ctx context.Context, d *store.FixedWindow) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if d.Limit > maxLuaInt { // Lua numbers are doubles
		return fmt.Errorf("%w: fixed window limit %d, window %v, cost %d", store.ErrInvalidArgument, d.Limit, d.Window, d.Cost)
	}
	if err := b.checkKey(d.Key); err != nil {
		return err
	}
	cost := min(d.Cost, maxLuaInt+1) // above Limit is denied either way
	k := b.key(d.Key)
	v, err := b.run(ctx, fixedWindowScript, []string{k, b.counter(k)}, i64(d.Limit), msArg(d.Window), i64(cost))
	if err != nil {
		return err
	}
	d.Allowed, d.Remaining, d.RetryAfter, d.Reset, err = limitReply(v)
	return err
}

// SlidingWindow implements store.Decisions.
func (b *Backend) SlidingWindow(ctx context.Context, d *store.SlidingWindow) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKey(d.Key); err != nil {
		return err
	}
	k := b.key(d.Key)
	v, err := b.run(ctx, slidingWindowScript, []string{k, b.counter(k)}, i64(d.Limit), usArg(d.Window), i64(d.Cost), msArg(d.Window))
	if err != nil {
		return err
	}
	d.Allowed, d.Remaining, d.RetryAfter, d.Reset, err = limitReply(v)
	return err
}

// Idempotency outcomes as the script returns them, and the store values
// they stand for (the table, not an iota order, ties the two together).
const (
	idemAbsent = iota
	idemClaimed
	idemRecovered
	idemInProgress
	idemCompleted
	idemMismatch
	idemReleased
	idemNotOwner
)

var idemOutcomes = [...]store.IdemOutcome{
	idemAbsent:     store.IdemAbsent,
	idemClaimed:    store.IdemClaimed,
	idemRecovered:  store.IdemRecovered,
	idemInProgress: store.IdemInProgress,
	idemCompleted:  store.IdemCompleted,
	idemMismatch:   store.IdemMismatch,
	idemReleased:   store.IdemReleased,
	idemNotOwner:   store.IdemNotOwner,
}

var idemOps = [...]string{store.IdemClaim: "claim", store.IdemComplete: "complete", store.IdemRelease: "release", store.IdemInspect: "inspect"}

// Idempotency implements store.Decisions.
func (b *Backend) Idempotency(ctx context.Context, d *store.Idempotency) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKey(d.Key); err != nil {
		return err
	}
	d.Outcome, d.StoredResult, d.Holder, d.PrevOwner, d.LeaseLeft, d.TTL = store.IdemAbsent, nil, "", "", 0, 0
	k := b.key(d.Key)
	v, err := b.run(ctx, idempotencyScript, []string{k, b.counter(k)},
		idemOps[d.Op], d.Fingerprint, d.Owner, usArg(d.Lease), msArg(d.Retention), d.Result)
	if err != nil {
		return err
	}
	r, err := readReply(v, 6)
	if err != nil {
		return err
	}
	o := r.int(0)
	res, holder, prev, left, ttl := r.str(1), r.str(2), r.str(3), r.us(4), r.us(5)
	if r.err == nil && (o < 0 || o >= int64(len(idemOutcomes))) {
		r.fail()
	}
	if r.err != nil {
		return r.err
	}
	d.Outcome = idemOutcomes[o]
	if d.Outcome == store.IdemCompleted {
		d.StoredResult = []byte(res)
	}
	d.Holder, d.PrevOwner, d.LeaseLeft, d.TTL = holder, prev, left, ttl
	return nil
}

var leaseOps = [...]string{store.LeaseAcquire: "acquire", store.LeaseRenew: "renew", store.LeaseRelease: "release", store.LeaseInspect: "inspect"}

// Lease implements store.Decisions.
func (b *Backend) Lease(ctx context.Context, d *store.Lease) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if d.MinToken >= maxLuaInt { // Lua numbers are doubles
		return fmt.Errorf("%w: lease op %d with holder %q, ttl %v, min token %d", store.ErrInvalidArgument, d.Op, d.Holder, d.TTL, d.MinToken)
	}
	if err := b.checkKey(d.Key); err != nil {
		return err
	}
	if err := b.checkKey(d.FenceKey); err != nil {
		return err
	}
	k, f := b.key(d.Key), b.key(d.FenceKey)
	if err := b.sameSlot(k, f); err != nil {
		return err
	}
	d.OK, d.Current, d.Fence = false, store.LeaseInfo{}, 0
	v, err := b.run(ctx, leaseScript, []string{k, f, b.counter(k)},
		leaseOps[d.Op], d.Holder, strconv.FormatUint(d.Token, 10), msArg(d.TTL), strconv.FormatUint(d.MinToken, 10))
	if err != nil {
		return err
	}
	if s, ok := v.([]any); ok && len(s) == 1 && s[0] == int64(-2) {
		return fmt.Errorf("%w: fencing token", store.ErrOverflow)
	}
	r, err := readReply(v, 5)
	if err != nil {
		return err
	}
	ok, h, token, ttl, fence := r.bool(0), r.str(1), r.uint(2), r.us(3), r.uint(4)
	if r.err != nil {
		return r.err
	}
	d.OK, d.Fence = ok, fence
	if h != "" {
		d.Current = store.LeaseInfo{Holder: h, Token: token, TTL: ttl}
	}
	return nil
}

// FlagWrite implements store.Decisions.
func (b *Backend) FlagWrite(ctx context.Context, d *store.FlagWrite) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	if err := b.checkKey(d.Key); err != nil {
		return err
	}
	if err := b.checkKey(d.AuditKey); err != nil {
		return err
	}
	k, a := b.key(d.Key), b.key(d.AuditKey)
	if err := b.sameSlot(k, a); err != nil {
		return err
	}
	d.OK, d.Version, d.Current = false, 0, 0
	v, err := b.run(ctx, flagWriteScript, []string{k, a, b.counter(k)},
		strconv.FormatUint(d.IfVersion, 10), d.Value, d.Audit, strconv.Itoa(d.AuditKeep))
	if err != nil {
		return err
	}
	r, err := readReply(v, 2)
	if err != nil {
		return err
	}
	ok, ver := r.bool(0), r.uint(1)
	if r.err == nil && ok && ver == 0 {
		r.fail()
	}
	if r.err != nil {
		return r.err
	}
	if ok {
		d.OK, d.Version = true, ver
	} else {
		d.Current = ver
	}
	return nil
}
