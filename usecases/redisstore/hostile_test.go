package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// snapshot is everything a test can see of a key: its type, its hash
// fields (for a hash) and whether it has a TTL.
type snapshot struct {
	typ    string
	fields map[string]string
	ttl    bool
}

func snap(t *testing.T, c redis.UniversalClient, k string) snapshot {
	t.Helper()
	ctx := context.Background()
	s := snapshot{typ: c.Type(ctx, k).Val()}
	if s.typ == "hash" {
		s.fields = c.HGetAll(ctx, k).Val()
	}
	s.ttl = c.PTTL(ctx, k).Val() > 0
	return s
}

// TestHostileRecords: a key whose content the scripts did not write — a
// hash missing a field, or a field that is not a non-negative integer
// ("nan", "inf", "-1", "1.5", "0x10", " 7", "1e3", all of which Lua's
// tonumber accepts) — is store.ErrCorrupt for every call that reads it,
// and the key is left exactly as it was. The embedded backend refuses the
// same shapes (its decoders parse base-10 integers); Redis must not read
// "nan" as a number, hand out a fencing token of 0 or "nan", or replace a
// foreign record as if the key were absent.
func TestHostileRecords(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	c := srv.Client(t)
	b, err := redisstore.New(redisstore.Config{Client: c, Prefix: "h:"})
	if err != nil {
		t.Fatal(err)
	}
	const k, other = "{x}", "{x}:other"
	var bad = []string{"nan", "-nan", "inf", "-1", "1.5", "0x10", " 7", "1e3", ""}
	type tc struct {
		name    string
		key     string            // the key the hostile record is written under (unprefixed)
		fields  map[string]string // the record (a hash)
		call    func() error      // the call that reads it
		corrupt bool              // want ErrCorrupt (else: want the call to leave the key as it was)
	}
	var cases []tc
	get := func() error { _, _, err := b.Get(ctx, k); return err }
	acquire := func() error {
		d := &store.Lease{Op: store.LeaseAcquire, Key: k, FenceKey: other, Holder: "h", TTL: time.Hour}
		if err := b.Lease(ctx, d); err != nil {
			return err
		}
		return fmt.Errorf("acquired token %d, fence %d", d.Current.Token, d.Fence)
	}
	inspect := func() error {
		d := &store.Lease{Op: store.LeaseInspect, Key: k, FenceKey: other}
		if err := b.Lease(ctx, d); err != nil {
			return err
		}
		return fmt.Errorf("inspected holder %q token %d", d.Current.Holder, d.Current.Token)
	}
	tb := func() error {
		d := &store.TokenBucket{Key: k, Capacity: 5, Interval: time.Second, Cost: 1}
		if err := b.TokenBucket(ctx, d); err != nil {
			return err
		}
		return fmt.Errorf("decided allowed %v remaining %d retry %v reset %v", d.Allowed, d.Remaining, d.RetryAfter, d.Reset)
	}
	fw := func() error {
		d := &store.FixedWindow{Key: k, Limit: 5, Window: time.Hour, Cost: 1}
		if err := b.FixedWindow(ctx, d); err != nil {
			return err
		}
		return fmt.Errorf("decided allowed %v remaining %d", d.Allowed, d.Remaining)
	}
	claim := func() error {
		d := &store.Idempotency{Op: store.IdemClaim, Key: k, Fingerprint: []byte("fp"), Owner: "o", Lease: time.Minute, Retention: time.Hour}
		if err := b.Idempotency(ctx, d); err != nil {
			return err
		}
		return fmt.Errorf("outcome %v", d.Outcome)
	}
	flag := func(key, audit string) func() error {
		return func() error {
			d := &store.FlagWrite{Key: key, AuditKey: audit, Value: []byte("on"), Audit: []byte("rec")}
			if err := b.FlagWrite(ctx, d); err != nil {
				return err
			}
			return fmt.Errorf("flag write OK %v version %d current %d", d.OK, d.Version, d.Current)
		}
	}
	cases = append(cases,
		tc{"Get of a hash with v but no ver", k, map[string]string{"v": "x"}, get, true},
		tc{"FlagWrite over a flag key without ver", k, map[string]string{"v": "x"}, flag(k, other), true},
		tc{"FlagWrite over a flag key without fields of Set", k, map[string]string{"a": "1"}, flag(k, other), true},
		tc{"FlagWrite onto an audit log without v", other, map[string]string{"h": "holder", "t": "3", "ver": "5"}, flag(k, other), true},
	)
	for _, v := range bad {
		cases = append(cases,
			tc{"Get of a version " + v, k, map[string]string{"v": "x", "ver": v}, get, true},
			tc{"Lease acquire on a fence " + v, other, map[string]string{"v": v, "ver": "5"}, acquire, true},
			tc{"Lease inspect of a token " + v, k, map[string]string{"h": "x", "t": v, "ver": "5"}, inspect, true},
			tc{"TokenBucket on a tat " + v, k, map[string]string{"v": v, "kd": "tb", "ver": "5"}, tb, true},
			tc{"FixedWindow on a count " + v, k, map[string]string{"v": v, "kd": "fw", "ver": "5"}, fw, true},
			tc{"Idempotency claim on a lease deadline " + v, k, map[string]string{"st": "p", "fp": "fp", "own": "a", "ld": v, "res": "", "ver": "5"}, claim, true},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "h:" + tc.key
			c.Del(ctx, "h:"+k, "h:"+other)
			args := []any{}
			for f, v := range tc.fields {
				args = append(args, f, v)
			}
			if err := c.HSet(ctx, key, args...).Err(); err != nil {
				t.Fatal(err)
			}
			c.PExpire(ctx, key, time.Hour)
			before := snap(t, c, key)
			err := tc.call()
			if tc.corrupt && !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("got %v, want ErrCorrupt", err)
			}
			if after := snap(t, c, key); !reflect.DeepEqual(after, before) {
				t.Errorf("key changed: got %+v, want %+v", after, before)
			}
			if tc.key != k {
				if typ := c.Type(ctx, "h:"+k).Val(); typ != "none" {
					t.Errorf("the call wrote %q (%s) beside a corrupt %q", k, typ, tc.key)
				}
			}
		})
	}
}
