package redisstore_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
	"github.com/tidekv/tide/usecases/store"
)

// TestNewRejectsNilClients: a nil client is refused at construction,
// whether the interface is nil or holds a nil pointer (a *redis.Client
// variable never assigned), instead of panicking on the first call.
func TestNewRejectsNilClients(t *testing.T) {
	var c *redis.Client
	var cc *redis.ClusterClient
	var r *redis.Ring
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
	}{
		{"nil interface", nil},
		{"nil *redis.Client", c},
		{"nil *redis.ClusterClient", cc},
		{"nil *redis.Ring", r},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v", p)
				}
			}()
			b, err := redisstore.New(redisstore.Config{Client: tc.client})
			if !errors.Is(err, store.ErrInvalidArgument) {
				t.Fatalf("New: got (%v, %v), want ErrInvalidArgument", b, err)
			}
		})
	}
}

// hook is a go-redis hook that hands each command to fn, which may fail it
// or rewrite its reply.
type hook struct {
	fn func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error
}

func (h hook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return h.fn(ctx, cmd, next) }
}
func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// serverErr is an error reply from the server (a redis.Error).
type serverErr string

func (e serverErr) Error() string { return string(e) }
func (serverErr) RedisError()     {}

// TestCheckReportsTransportErrors: Check skips the policy check only when
// the server refuses CONFIG GET (a managed service that renamed it); a
// connection that fails on CONFIG GET has verified nothing, and Check must
// say so (store.ErrUnavailable), not pass.
func TestCheckReportsTransportErrors(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	for _, tc := range []struct {
		name    string
		fail    error
		wantErr error // nil: Check passes
	}{
		{"CONFIG GET refused by the server", serverErr("ERR unknown command 'config'"), nil},
		{"connection lost on CONFIG GET", io.ErrUnexpectedEOF, store.ErrUnavailable},
		{"server loading its data", serverErr("LOADING Redis is loading the dataset in memory"), store.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := srv.Client(t)
			c.AddHook(hook{func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				if strings.EqualFold(cmd.Name(), "config") {
					cmd.SetErr(tc.fail)
					return tc.fail
				}
				return next(ctx, cmd)
			}})
			b, err := redisstore.New(redisstore.Config{Client: c})
			if err != nil {
				t.Fatal(err)
			}
			err = b.Check(ctx)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("Check: got %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestUnexpectedReplies: a script reply of a shape the backend does not
// expect (a proxy in between, a server that is not Redis) is an error
// matching store.ErrUnavailable — the script may or may not have run —
// never a panic, and never a success with version 0 (a version is never
// 0).
func TestUnexpectedReplies(t *testing.T) {
	ctx := context.Background()
	srv := redisserver.Start(t)
	var reply any
	c := srv.Client(t)
	c.AddHook(hook{func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		err := next(ctx, cmd)
		if n := strings.ToLower(cmd.Name()); n == "evalsha" || n == "eval" {
			cmd.(interface{ SetVal(any) }).SetVal(reply)
			cmd.SetErr(nil)
			return nil
		}
		return err
	}})
	b, err := redisstore.New(redisstore.Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Set", func() error {
			v, ok, err := b.Set(ctx, "k", []byte("v"), store.SetOptions{TTL: store.NoTTL})
			if err == nil && ok && v == 0 {
				return errors.New("ok with version 0")
			}
			return err
		}},
		{"Get", func() error {
			it, ok, err := b.Get(ctx, "k")
			if err == nil && ok && it.Version == 0 {
				return errors.New("ok with version 0")
			}
			return err
		}},
		{"TokenBucket", func() error {
			return b.TokenBucket(ctx, &store.TokenBucket{Key: "tb", Capacity: 5, Interval: time.Second, Cost: 1})
		}},
		{"FixedWindow", func() error {
			return b.FixedWindow(ctx, &store.FixedWindow{Key: "fw", Limit: 5, Window: time.Second, Cost: 1})
		}},
		{"Idempotency", func() error {
			return b.Idempotency(ctx, &store.Idempotency{Op: store.IdemClaim, Key: "i", Fingerprint: []byte("f"), Owner: "o", Lease: time.Second, Retention: time.Second})
		}},
		{"Lease", func() error {
			return b.Lease(ctx, &store.Lease{Op: store.LeaseAcquire, Key: "{l}", FenceKey: "{l}f", Holder: "h", TTL: time.Second})
		}},
		{"FlagWrite", func() error {
			return b.FlagWrite(ctx, &store.FlagWrite{Key: "{f}", AuditKey: "{f}a", Value: []byte("v"), Audit: []byte("a")})
		}},
		{"Delete", func() error { _, err := b.Delete(ctx, "k"); return err }},
		{"CompareAndDelete", func() error { _, err := b.CompareAndDelete(ctx, "k", 5); return err }},
	}
	// Each reply is of a wrong shape for every call: a call may not read
	// it as an answer.
	for _, r := range []struct {
		name  string
		reply any
	}{
		{"a word", "garbage"},
		{"a number 7", int64(7)},
		{"a number -3", int64(-3)},
		{"an empty array", []any{}},
		{"an array of words", []any{"a", "b", "c", "d", "e", "f"}},
		{"an array with nils", []any{nil, nil, nil, nil, nil, nil}},
		{"an array of floats", []any{1.5, 2.5, 3.5, 4.5, 5.5, 6.5}},
	} {
		for _, c := range calls {
			t.Run(r.name+"/"+c.name, func(t *testing.T) {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				reply = r.reply
				if err := c.call(); !errors.Is(err, store.ErrUnavailable) {
					t.Errorf("got %v, want an error matching ErrUnavailable", err)
				}
			})
		}
	}
}
