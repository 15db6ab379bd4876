package embedded

import (
	"context"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/store"
)

func (b *Backend) flagWrite(ctx context.Context, d *store.FlagWrite) error {
	d.OK, d.Version, d.Current = false, 0, 0
	return b.optimistic(ctx, func() (bool, error) {
		var cur uint64
		if it, ok := b.e.GetItem(d.Key); ok {
			cur = it.Version
		}
		if cur != d.IfVersion {
			d.Current = cur
			return true, nil
		}
		ait, _ := b.e.GetItem(d.AuditKey)
		log, err := store.AppendLog(ait.Value, d.Audit, d.AuditKeep)
		if err != nil {
			return false, err
		}
		pre := []engine.Precondition{{Key: d.Key, Version: d.IfVersion}, {Key: d.AuditKey, Version: ait.Version}}
		ops := []engine.Op{{Key: d.Key, Value: d.Value, Pin: true, TTL: engine.NoTTL}, {Key: d.AuditKey, Value: log, Pin: true, TTL: engine.NoTTL}}
		vs, won, err := b.e.Commit(pre, ops)
		if err != nil {
			return false, err
		}
		if won {
			d.OK, d.Version = true, vs[0]
			return true, nil
		}
		return false, nil // lost a race: read again
	})
}
