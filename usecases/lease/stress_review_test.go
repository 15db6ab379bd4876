package lease_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/lease"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// Many holders racing on one lease (acquire, release, expiry by the
// clock): every token is issued once, at most one holder holds the lease
// at a time, and two Managers sharing the backend share the fence.
func TestRacingHoldersGetDistinctTokens(t *testing.T) {
	b, clk := storetest.NewEmbedded(t)
	m1, _ := lease.New(lease.Config{Backend: b, TTL: time.Second})
	m2, _ := lease.New(lease.Config{Backend: b, TTL: 2 * time.Second})
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[uint64]string{}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := m1
			if i%2 == 1 {
				m = m2
			}
			me := fmt.Sprint("h", i)
			for j := range 200 {
				l, _, ok, err := m.Acquire(ctx, "shared", me)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					if j%7 == 0 {
						clk.Advance(time.Second)
					}
					continue
				}
				mu.Lock()
				if o, dup := seen[l.Token]; dup {
					t.Errorf("token %d issued to %s and %s", l.Token, o, me)
				}
				seen[l.Token] = me
				mu.Unlock()
				if j%3 == 0 {
					m.Release(ctx, l)
				}
			}
		}()
	}
	wg.Wait()
	info, _, err := m1.Inspect(ctx, "shared")
	if err != nil || info.Fence != uint64(len(seen)) {
		t.Fatalf("fence %d (%v) after %d acquisitions; want equal", info.Fence, err, len(seen))
	}
	for tok := uint64(1); tok <= info.Fence; tok++ {
		if _, ok := seen[tok]; !ok {
			t.Fatalf("token %d never handed out (fence %d)", tok, info.Fence)
		}
	}
}
