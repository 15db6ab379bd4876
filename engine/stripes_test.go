package engine

import (
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

// No stripe shares the first line of its structure, which the nil check of
// every method call on a pointer to it loads (see lineGuard).
func TestStripesLeaveTheFirstLineAlone(t *testing.T) {
	tests := []struct {
		name  string
		first uintptr // offset of the first stripe
	}{
		{"readCounts", unsafe.Offsetof(readCounts{}.s)},
		{"readLog", unsafe.Offsetof(readLog{}.access)},
		{"viewCounts", unsafe.Offsetof(viewCounts{}.s)},
	}
	for _, tt := range tests {
		if tt.first < 64 {
			t.Errorf("%s: first stripe at offset %d, want ≥ 64", tt.name, tt.first)
		}
	}
}

// procStripe names a P: below GOMAXPROCS, from every goroutine.
func TestProcStripeIsAP(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	bad := make(chan uint32, 1)
	for range 4 * procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if r := procStripe(); int(r) >= procs {
					select {
					case bad <- r:
					default:
					}
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	select {
	case r := <-bad:
		t.Fatalf("procStripe() = %d, want < GOMAXPROCS = %d", r, procs)
	default:
	}
}
