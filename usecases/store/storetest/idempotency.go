package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/idempotency"
)

// RunIdempotency runs package idempotency's contract suite on a backend.
func RunIdempotency(t *testing.T, newFixture NewFunc) {
	newFixture = instrument(newFixture)
	ctx := context.Background()
	k := idempotency.Key{Scope: "acct-1", Operation: "charge", Key: "key-1"}
	fp1, fp2 := idempotency.Fingerprint([]byte("100 EUR")), idempotency.Fingerprint([]byte("999 EUR"))
	t.Run("Do", func(t *testing.T) {
		f := newFixture(t)
		s, err := idempotency.New(idempotency.Config{Backend: f.Backend, Retention: 100 * f.unit(), Lease: 10 * f.unit()})
		if err != nil {
			t.Fatal(err)
		}
		var calls int
		charge := func(context.Context) ([]byte, error) { calls++; return []byte(fmt.Sprint("receipt-", calls)), nil }
		type step struct {
			k        idempotency.Key
			fp       []byte
			want     string
			replayed bool
			err      error
			calls    int
		}
		other := k
		other.Scope = "acct-2"
		steps := []step{
			{k, fp1, "receipt-1", false, nil, 1},
			{k, fp1, "receipt-1", true, nil, 1},
			{k, fp2, "", false, idempotency.ErrMismatch, 1},
			{other, fp2, "receipt-2", false, nil, 2}, // another scope: another key
			{idempotency.Key{Scope: "acct-1", Operation: "refund", Key: "key-1"}, fp1, "receipt-3", false, nil, 3},
		}
		for i, st := range steps {
			res, replayed, err := s.Do(ctx, st.k, st.fp, charge)
			if string(res) != st.want || replayed != st.replayed || !errors.Is(err, st.err) || (st.err == nil && err != nil) || calls != st.calls {
				t.Errorf("step %d: got (%q, replayed %v, %v, calls %d), want (%q, %v, %v, %d)", i, res, replayed, err, calls, st.want, st.replayed, st.err, st.calls)
			}
		}
		// Claim, Complete and Do share one encoding of the outcome.
		if c, err := s.Claim(ctx, k, fp1); err != nil || c.State != idempotency.Completed || string(c.Result) != "receipt-1" || c.Err != nil {
			t.Errorf("Claim of a key completed by Do: got (%v, %q, %v, %v), want (completed, \"receipt-1\", nil, nil)", c.State, c.Result, c.Err, err)
		}
		k3 := k
		k3.Key = "manual"
		c, _ := s.Claim(ctx, k3, fp1)
		if stored, err := s.Complete(ctx, k3, c.Owner, []byte("by hand")); string(stored) != "by hand" || err != nil {
			t.Errorf("Complete: got (%q, %v), want (\"by hand\", nil)", stored, err)
		}
		if res, replayed, err := s.Do(ctx, k3, fp1, charge); string(res) != "by hand" || !replayed || err != nil {
			t.Errorf("Do on a key completed by Complete: got (%q, %v, %v), want the replay", res, replayed, err)
		}
		k4 := k
		k4.Key = "failed"
		c, _ = s.Claim(ctx, k4, fp1)
		if err := s.Fail(ctx, k4, c.Owner, errors.New("card expired")); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.Claim(ctx, k4, fp1); c.State != idempotency.Completed || !errors.Is(c.Err, idempotency.ErrFailed) || c.Result != nil {
			t.Errorf("Claim of a failed key: got (%v, %q, %v), want completed with an ErrFailed error", c.State, c.Result, c.Err)
		}
		if _, _, err := s.Do(ctx, idempotency.Key{}, fp1, charge); !errors.Is(err, idempotency.ErrInvalidKey) {
			t.Errorf("empty key: got %v, want ErrInvalidKey", err)
		}
	})
	t.Run("Failures", func(t *testing.T) {
		f := newFixture(t)
		s, _ := idempotency.New(idempotency.Config{Backend: f.Backend})
		boom := errors.New("card declined")
		// A transient failure releases the claim: the retry executes.
		if _, _, err := s.Do(ctx, k, fp1, func(context.Context) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
			t.Fatalf("transient failure: got %v, want %v", err, boom)
		}
		if res, replayed, err := s.Do(ctx, k, fp1, func(context.Context) ([]byte, error) { return []byte("ok"), nil }); string(res) != "ok" || replayed || err != nil {
			t.Fatalf("retry after a transient failure: got (%q, %v, %v), want (\"ok\", false, nil)", res, replayed, err)
		}
		// A permanent failure is recorded and replayed.
		k2 := k
		k2.Key = "key-2"
		if _, _, err := s.Do(ctx, k2, fp1, func(context.Context) ([]byte, error) { return nil, idempotency.Permanent(boom) }); !errors.Is(err, idempotency.ErrFailed) {
			t.Fatalf("permanent failure: got %v, want ErrFailed", err)
		}
		ran := false
		_, replayed, err := s.Do(ctx, k2, fp1, func(context.Context) ([]byte, error) { ran = true; return nil, nil })
		if ran || !replayed || !errors.Is(err, idempotency.ErrFailed) {
			t.Fatalf("duplicate of a permanent failure: got (ran %v, replayed %v, %v), want the failure replayed", ran, replayed, err)
		}
	})
	t.Run("InProgressAndRecovery", func(t *testing.T) {
		f := newFixture(t)
		needTime(t, f)
		u := f.unit()
		var recovered []string
		recoverHook := func(_ context.Context, _ idempotency.Key, prev string) ([]byte, bool, error) {
			recovered = append(recovered, prev)
			return []byte("found downstream"), true, nil
		}
		s, _ := idempotency.New(idempotency.Config{Backend: f.Backend, Retention: 100 * u, Lease: 10 * u, Recover: recoverHook})
		noHook, _ := idempotency.New(idempotency.Config{Backend: f.Backend, Retention: 100 * u, Lease: 10 * u})
		c, err := s.Claim(ctx, k, fp1) // the owner then "dies"
		if err != nil || c.State != idempotency.Execute {
			t.Fatalf("Claim: got (%v, %v), want execute", c.State, err)
		}
		f.Advance(4 * u)
		var ipe *idempotency.InProgressError
		_, _, err = s.Do(ctx, k, fp1, func(context.Context) ([]byte, error) { t.Fatal("executed during the claim"); return nil, nil })
		if !errors.As(err, &ipe) || !errors.Is(err, idempotency.ErrInProgress) {
			t.Fatalf("duplicate in progress: got %v, want *InProgressError", err)
		}
		f.checkDur(t, "retry hint", ipe.RetryAfter, 6*u)
		f.Advance(6*u + f.Slack)
		if _, _, err := noHook.Do(ctx, k, fp1, func(context.Context) ([]byte, error) { t.Fatal("blind re-run"); return nil, nil }); !errors.Is(err, idempotency.ErrNeedsRecovery) {
			t.Fatalf("recovery without a hook: got %v, want ErrNeedsRecovery", err)
		}
		f.Advance(10*u + f.Slack)
		res, _, err := s.Do(ctx, k, fp1, func(context.Context) ([]byte, error) { t.Fatal("blind re-run"); return nil, nil })
		if string(res) != "found downstream" || err != nil || len(recovered) != 1 {
			t.Fatalf("recovery: got (%q, %v, hook calls %d), want the hook's result", res, err, len(recovered))
		}
		// The dead owner comes back and tries to complete.
		if stored, err := s.Complete(ctx, k, c.Owner, []byte("late")); err != nil || string(stored) == "late" {
			t.Fatalf("late completion by the dead owner: got (%q, %v), want the recovered result kept", stored, err)
		}
		// Retention is fixed from the first claim; reads do not extend it.
		f.Advance(78 * u) // t = 98 units
		if _, replayed, _ := s.Do(ctx, k, fp1, func(context.Context) ([]byte, error) { return nil, nil }); !replayed {
			t.Fatal("record gone before its retention")
		}
		f.Advance(2*u + f.Slack) // past 100 units
		if _, replayed, err := s.Do(ctx, k, fp2, func(context.Context) ([]byte, error) { return []byte("new"), nil }); replayed || err != nil {
			t.Fatalf("after retention: got (replayed %v, %v), want a fresh execution", replayed, err)
		}
	})
	t.Run("ExactlyOnceUnder64Duplicates", func(t *testing.T) {
		f := newFixture(t)
		s, _ := idempotency.New(idempotency.Config{Backend: f.Backend, Retention: 1000 * f.unit(), Lease: 100 * f.unit()})
		var effects atomic.Int64
		var inProgress, replays atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					res, replayed, err := s.Do(ctx, k, fp1, func(context.Context) ([]byte, error) {
						effects.Add(1)
						time.Sleep(time.Millisecond)
						return []byte("charged"), nil
					})
					if errors.Is(err, idempotency.ErrInProgress) {
						inProgress.Add(1)
						time.Sleep(100 * time.Microsecond)
						continue
					}
					if err != nil || string(res) != "charged" {
						t.Errorf("got (%q, %v), want \"charged\"", res, err)
					}
					if replayed {
						replays.Add(1)
					}
					return
				}
			}()
		}
		close(start)
		wg.Wait()
		if got := effects.Load(); got != 1 {
			t.Fatalf("side effect executed %d times, want exactly once", got)
		}
		if got := replays.Load(); got != 63 {
			t.Fatalf("replays: got %d, want 63", got)
		}
		t.Logf("%d in-progress answers", inProgress.Load())
	})
	runIdempotencyOutcome(t, newFixture)
}
