package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
)

const (
	idemInProgress byte = 1
	idemCompleted  byte = 2
)

// idemRecord is the stored idempotency record: state, lease deadline (store
// nanoseconds), fingerprint, owner, result.
type idemRecord struct {
	state    byte
	deadline int64
	fp       []byte
	owner    string
	result   []byte
}

func (r *idemRecord) encode() []byte {
	buf := make([]byte, 0, 1+8+12+len(r.fp)+len(r.owner)+len(r.result))
	buf = append(buf, r.state)
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.deadline))
	for _, f := range [][]byte{r.fp, []byte(r.owner), r.result} {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(f)))
		buf = append(buf, f...)
	}
	return buf
}

func decodeIdem(v []byte) (idemRecord, error) {
	var r idemRecord
	bad := fmt.Errorf("%w: idempotency record", store.ErrCorrupt)
	if len(v) < 9 {
		return r, bad
	}
	r.state, r.deadline = v[0], int64(binary.BigEndian.Uint64(v[1:]))
	if r.state != idemInProgress && r.state != idemCompleted || r.deadline < 0 {
		// A negative deadline is none this backend writes: read as a
		// lapsed lease, it would let the next claim take the record over.
		return r, bad
	}
	v = v[9:]
	var f [3][]byte
	for i := range f {
		if len(v) < 4 {
			return r, bad
		}
		n := binary.BigEndian.Uint32(v)
		v = v[4:]
		if uint64(n) > uint64(len(v)) {
			return r, bad
		}
		f[i], v = v[:n:n], v[n:]
	}
	if len(v) != 0 {
		return r, bad
	}
	r.fp, r.owner, r.result = f[0], string(f[1]), f[2]
	return r, nil
}

func (b *Backend) idempotency(ctx context.Context, d *store.Idempotency) error {
	d.Outcome, d.StoredResult, d.Holder, d.PrevOwner, d.LeaseLeft, d.TTL = store.IdemAbsent, nil, "", "", 0, 0
	return b.optimistic(ctx, func() (bool, error) {
		now := b.now()
		if d.Op == store.IdemClaim && now > math.MaxInt64-int64(d.Retention) {
			// Retention ≥ Lease: both deadlines would be past the clock's
			// range. Refused whatever the record's state, before a
			// recovery could store a lease deadline that wrapped around
			// (already lapsed: the next claim would take over at once).
			return false, fmt.Errorf("%w: idempotency retention %v ends past the clock's range", store.ErrInvalidArgument, d.Retention)
		}
		it, ok := b.e.GetItem(d.Key)
		var r idemRecord
		if ok {
			var err error
			if r, err = decodeIdem(it.Value); err != nil {
				return false, err
			}
			d.TTL = max(it.TTL, 0)
		}
		done, won, err := b.idemStep(d, ok, it, r, now)
		if err != nil || done {
			return true, err
		}
		if won {
			return true, nil
		}
		return false, nil // lost a race: read again
	})
}

// idemStep applies one attempt. done: the outcome is final without a write;
// won: the write succeeded.
func (b *Backend) idemStep(d *store.Idempotency, ok bool, it engine.Item, r idemRecord, now int64) (done, won bool, err error) {
	if !ok {
		d.TTL = 0
		if d.Op != store.IdemClaim {
			d.Outcome = store.IdemAbsent
			return true, false, nil
		}
		nr := idemRecord{state: idemInProgress, deadline: now + int64(d.Lease), fp: d.Fingerprint, owner: d.Owner}
		_, won, err = b.e.SetWith(d.Key, nr.encode(), engine.SetOptions{Only: engine.ConditionIfAbsent, TTL: d.Retention})
		if won {
			d.Outcome, d.TTL = store.IdemClaimed, d.Retention
		}
		return false, won, err
	}
	if r.state == idemCompleted {
		if d.Op == store.IdemClaim && !bytes.Equal(r.fp, d.Fingerprint) {
			d.Outcome = store.IdemMismatch
			return true, false, nil
		}
		d.Outcome, d.StoredResult = store.IdemCompleted, r.result
		return true, false, nil
	}
	// In progress.
	switch d.Op {
	case store.IdemInspect:
		d.Outcome, d.Holder, d.LeaseLeft = store.IdemInProgress, r.owner, time.Duration(r.deadline-now)
		return true, false, nil
	case store.IdemClaim:
		if !bytes.Equal(r.fp, d.Fingerprint) {
			d.Outcome = store.IdemMismatch
			return true, false, nil
		}
		if now < r.deadline {
			d.Outcome, d.Holder, d.LeaseLeft = store.IdemInProgress, r.owner, time.Duration(r.deadline-now)
			return true, false, nil
		}
		prev := r.owner
		r.owner, r.deadline = d.Owner, now+int64(d.Lease)
		_, won, err = b.e.SetWith(d.Key, r.encode(), engine.SetOptions{IfVersion: it.Version, KeepTTL: true})
		if won {
			d.Outcome, d.PrevOwner = store.IdemRecovered, prev
		}
		return false, won, err
	}
	if r.owner != d.Owner {
		d.Outcome, d.Holder, d.LeaseLeft = store.IdemNotOwner, r.owner, time.Duration(r.deadline-now)
		return true, false, nil
	}
	if d.Op == store.IdemRelease {
		_, won, err := b.e.DeleteWith(d.Key, engine.DeleteOptions{IfVersion: it.Version})
		if won {
			d.Outcome, d.TTL = store.IdemReleased, 0
		}
		return false, won, err
	}
	r.state, r.result = idemCompleted, d.Result
	_, won, err = b.e.SetWith(d.Key, r.encode(), engine.SetOptions{IfVersion: it.Version, KeepTTL: true})
	if won {
		d.Outcome, d.StoredResult = store.IdemCompleted, d.Result
	}
	return false, won, err
}
