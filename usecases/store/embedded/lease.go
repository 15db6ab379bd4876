package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
)

// kindLease starts every lease record, so that a key holding another
// kind's state (a limiter's, an idempotency record, a value Set wrote) is
// ErrCorrupt, never read as a lease (ratelimit.go's kinds are 't', 'f',
// 's'; an idempotency record starts with its state, 1 or 2).
const kindLease = 'l'

// encodeLease encodes a lease record: kindLease, the token (8 bytes, big
// endian), the holder.
func encodeLease(holder string, token uint64) []byte {
	buf := binary.BigEndian.AppendUint64(append(make([]byte, 0, 9+len(holder)), kindLease), token)
	return append(buf, holder...)
}

func decodeLease(v []byte) (string, uint64, error) {
	if len(v) < 9 || v[0] != kindLease {
		return "", 0, fmt.Errorf("%w: key does not hold a lease record", store.ErrCorrupt)
	}
	return string(v[9:]), binary.BigEndian.Uint64(v[1:]), nil
}

func (b *Backend) lease(ctx context.Context, d *store.Lease) error {
	return b.optimistic(ctx, func() (bool, error) {
		d.OK, d.Current, d.Fence = false, store.LeaseInfo{}, 0
		it, live := b.e.GetItem(d.Key)
		if live {
			h, t, err := decodeLease(it.Value)
			if err != nil {
				return false, err
			}
			d.Current = store.LeaseInfo{Holder: h, Token: t, TTL: max(it.TTL, 0)}
		}
		fit, fok := b.e.GetItem(d.FenceKey)
		var fence int64
		if fok {
			f, err := parseInt(fit.Value)
			if err != nil {
				return false, err
			}
			fence = f
		}
		d.Fence = uint64(max(fence, 0))
		won := false
		var err error
		switch d.Op {
		case store.LeaseInspect:
			d.OK = live
			return true, nil
		case store.LeaseAcquire:
			if live {
				return true, nil
			}
			if fence == math.MaxInt64 {
				return false, fmt.Errorf("%w: fencing token", store.ErrOverflow)
			}
			t := max(uint64(fence)+1, d.MinToken)
			pre := []engine.Precondition{{Key: d.Key}, {Key: d.FenceKey, Version: fit.Version}}
			ops := []engine.Op{
				// Sync: a token handed out survives an OS crash under
				// every fsync policy of a durable engine.
				{Key: d.FenceKey, Value: strconv.AppendUint(nil, t, 10), Pin: true, TTL: engine.NoTTL, Sync: true},
				{Key: d.Key, Value: encodeLease(d.Holder, t), TTL: d.TTL, Pin: true},
			}
			_, won, err = b.e.Commit(pre, ops)
			if won {
				d.OK, d.Fence, d.Current = true, t, store.LeaseInfo{Holder: d.Holder, Token: t, TTL: d.TTL}
			}
		case store.LeaseRenew, store.LeaseRelease:
			if !live || d.Current.Holder != d.Holder || d.Current.Token != d.Token {
				return true, nil
			}
			if d.Op == store.LeaseRenew {
				_, won, err = b.e.SetWith(d.Key, it.Value, engine.SetOptions{IfVersion: it.Version, TTL: d.TTL})
				if won {
					d.OK, d.Current.TTL = true, d.TTL
				}
			} else {
				_, won, err = b.e.DeleteWith(d.Key, engine.DeleteOptions{IfVersion: it.Version})
				if won {
					d.OK, d.Current = true, store.LeaseInfo{}
				}
			}
		}
		if err != nil {
			return false, err
		}
		if won {
			return true, nil
		}
		return false, nil // lost a race: read again
	})
}
