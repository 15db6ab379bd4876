package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/usecases/idempotency"
	"github.com/tidekv/tide/usecases/store/embedded"
)

// restart shows durability: a payment completes on an engine with a log,
// the process "restarts" (the engine is closed and a new one opened on the
// same directory), and the client's retry gets the stored result instead
// of a second charge.
func restart(ctx context.Context, w *world) error {
	dir, err := os.MkdirTemp("", "atlasmart-log-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	open := func() (*engine.Engine, *idempotency.Store, error) {
		e, err := engine.New(engine.Config{Clock: w.clk, ExpiryInterval: -1,
			Durability: engine.Durability{Dir: dir, Sync: engine.SyncAlways}})
		if err != nil {
			return nil, nil, err
		}
		b, err := embedded.New(embedded.Config{Engine: e})
		if err == nil {
			var s *idempotency.Store
			if s, err = idempotency.New(idempotency.Config{Backend: b}); err == nil {
				return e, s, nil
			}
		}
		e.Close()
		return nil, nil, err
	}
	charges := 0
	charge := func(context.Context) ([]byte, error) {
		charges++
		return []byte(fmt.Sprintf(`{"charge":"ch_%d","amount":7500}`, charges)), nil
	}
	k := idempotency.Key{Scope: "cust-7", Operation: "POST /payments", Key: "order-2002"}
	fp := idempotency.Fingerprint([]byte("7500"))

	e, s, err := open()
	if err != nil {
		return err
	}
	w.say("the shop's engine logs every write to disk before applying it (fsync on every write)")
	res, _, err := s.Do(ctx, k, fp, charge)
	if err != nil {
		e.Close()
		return err
	}
	w.say("POST /payments key=%q → %s", k.Key, res)
	if err := e.Close(); err != nil {
		return err
	}
	w.say("deploy: the process stops before the client sees the response")
	w.clk.Advance(20 * time.Second)

	e, s, err = open()
	if err != nil {
		return err
	}
	defer e.Close()
	rep := e.Recovery()
	w.say("the new process replays the log: %d record(s) restored", rep.Entries)
	res, replayed, err := s.Do(ctx, k, fp, charge)
	if err != nil {
		return err
	}
	extra := ""
	if replayed {
		extra = " (replayed)"
	}
	w.say("the client retries: key=%q → %s%s", k.Key, res, extra)
	w.say("card charged %d time(s) across the restart", charges)
	return nil
}
