package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// Every limiter state starts with a byte naming its kind, so that a key
// holding another kind's state (two limiters of different algorithms on one
// key) is ErrCorrupt, never read as this kind's own.
const (
	kindTokenBucket   = 't'
	kindFixedWindow   = 'f'
	kindSlidingWindow = 's'
)

// untag returns v without its kind byte, or ErrCorrupt if v is not of kind.
func untag(v []byte, kind byte) ([]byte, error) {
	if len(v) == 0 || v[0] != kind {
		return nil, fmt.Errorf("%w: key does not hold %q state", store.ErrCorrupt, kind)
	}
	return v[1:], nil
}

// parseTagged parses a tagged base-10 integer.
func parseTagged(v []byte, kind byte) (int64, error) {
	b, err := untag(v, kind)
	if err != nil {
		return 0, err
	}
	return parseInt(b)
}

// parseInt parses a stored count, time or fencing token: base-10 digits
// only (every one this backend writes is non-negative), so that a value
// no decision wrote ("-1", "+3", " 7", "1.5") is store.ErrCorrupt, never
// a number misread (a fence of "-1" would hand out token 0).
func parseInt(b []byte) (int64, error) {
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q is not a non-negative integer", store.ErrCorrupt, b)
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer", store.ErrCorrupt, b)
	}
	return n, nil
}

func (b *Backend) tokenBucket(ctx context.Context, d *store.TokenBucket) error {
	burst := d.Capacity * int64(d.Interval)
	cost := d.Cost * int64(d.Interval)
	return b.optimistic(ctx, func() (bool, error) {
		now := b.now()
		if now > math.MaxInt64-burst {
			// The bucket's horizon, now + Capacity×Interval, is past the
			// clock's range (year 2262): parameters this backend cannot
			// represent, not a corrupt state.
			return false, fmt.Errorf("%w: token bucket capacity %d × interval %v ends past the clock's range", store.ErrInvalidArgument, d.Capacity, d.Interval)
		}
		it, ok := b.e.GetItem(d.Key)
		tat := now
		if ok {
			t, err := parseTagged(it.Value, kindTokenBucket)
			if err != nil {
				return false, err
			}
			tat = max(tat, t)
		}
		if tat > math.MaxInt64-cost {
			return false, fmt.Errorf("%w: token bucket state overflows", store.ErrCorrupt)
		}
		next := tat + cost
		if next-now > burst {
			*d = store.TokenBucket{Key: d.Key, Capacity: d.Capacity, Interval: d.Interval, Cost: d.Cost,
				Allowed: false, Remaining: max(0, (burst-(tat-now))/int64(d.Interval)),
				RetryAfter: time.Duration(next - now - burst), Reset: time.Duration(tat - now)}
			return true, nil
		}
		if d.Cost > 0 {
			_, won, err := b.put(d.Key, ok, it.Version, strconv.AppendInt([]byte{kindTokenBucket}, next, 10), time.Duration(next-now), false)
			if err != nil {
				return false, err
			}
			if !won {
				return false, nil
			}
		}
		d.Allowed, d.Remaining = true, (burst-(next-now))/int64(d.Interval)
		d.RetryAfter, d.Reset = 0, time.Duration(next-now)
		return true, nil
	})
}

func (b *Backend) fixedWindow(ctx context.Context, d *store.FixedWindow) error {
	return b.optimistic(ctx, func() (bool, error) {
		it, ok := b.e.GetItem(d.Key)
		var n int64
		ttl := d.Window
		if ok {
			v, err := parseTagged(it.Value, kindFixedWindow)
			if err != nil {
				return false, err
			}
			n = v
			ttl = max(it.TTL, 0) // a counter without TTL (never written so) reports 0
		}
		if d.Cost > d.Limit-n {
			d.Allowed, d.Remaining = false, max(0, d.Limit-n)
			d.RetryAfter, d.Reset = ttl, ttl
			return true, nil
		}
		if d.Cost > 0 {
			_, won, err := b.put(d.Key, ok, it.Version, strconv.AppendInt([]byte{kindFixedWindow}, n+d.Cost, 10), d.Window, true)
			if err != nil {
				return false, err
			}
			if !won {
				return false, nil
			}
		} else if !ok {
			ttl = 0
		}
		d.Allowed, d.Remaining = true, d.Limit-n-d.Cost
		d.RetryAfter, d.Reset = 0, ttl
		return true, nil
	})
}

func decodeLog(v []byte) ([]int64, error) {
	v, err := untag(v, kindSlidingWindow)
	if err != nil {
		return nil, err
	}
	if len(v)%8 != 0 {
		return nil, fmt.Errorf("%w: sliding window log of %d bytes", store.ErrCorrupt, len(v))
	}
	out := make([]int64, len(v)/8)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
	}
	return out, nil
}

func (b *Backend) slidingWindow(ctx context.Context, d *store.SlidingWindow) error {
	w := int64(d.Window)
	return b.optimistic(ctx, func() (bool, error) {
		now := b.now()
		it, ok := b.e.GetItem(d.Key)
		var log []int64
		if ok {
			l, err := decodeLog(it.Value)
			if err != nil {
				return false, err
			}
			slices.Sort(l)
			i := 0
			for i < len(l) && l[i] <= now-w {
				i++
			}
			log = l[i:]
		}
		n := int64(len(log))
		reset := time.Duration(0)
		if n > 0 {
			reset = time.Duration(log[n-1] + w - now)
		}
		if n+d.Cost > d.Limit {
			k := n + d.Cost - d.Limit
			d.Allowed, d.Remaining = false, max(0, d.Limit-n)
			d.RetryAfter, d.Reset = time.Duration(log[k-1]+w-now), reset
			return true, nil
		}
		if d.Cost > 0 {
			for range d.Cost {
				log = append(log, now)
			}
			slices.Sort(log)
			buf := make([]byte, 1, 1+8*len(log))
			buf[0] = kindSlidingWindow
			for _, t := range log {
				buf = binary.BigEndian.AppendUint64(buf, uint64(t))
			}
			_, won, err := b.put(d.Key, ok, it.Version, buf, d.Window, false)
			if err != nil {
				return false, err
			}
			if !won {
				return false, nil
			}
			reset = time.Duration(log[len(log)-1] + w - now)
		}
		d.Allowed, d.Remaining = true, d.Limit-n-d.Cost
		d.RetryAfter, d.Reset = 0, reset
		return true, nil
	})
}
