package engine

import (
	"errors"
	"strconv"
	"testing"

	"github.com/tidekv/tide/evict"
)

// TestCapHoldsWhateverTheShardCount guards the promise that MaxBytes is a
// cap on the whole engine, however many shards it has: with more shards
// than bytes, nothing larger than the cap is stored and the accounted bytes
// never exceed it.
func TestCapHoldsWhateverTheShardCount(t *testing.T) {
	for _, pol := range []evict.Spec{evict.NoEviction, evict.AllKeysLRU} {
		t.Run(pol.Name, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 256, MaxBytes: 200, Policy: pol})
			if _, err := e.Set("big", make([]byte, 1<<20)); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("1 MiB under a 200-byte cap: err = %v, want ErrTooLarge", err)
			}
			for i := range 100 {
				_, err := e.Set("k"+strconv.Itoa(i), []byte("0123456789"))
				if err != nil && !errors.Is(err, ErrOutOfMemory) {
					t.Fatal(err)
				}
				if st := e.Stats(); st.Bytes > 200 || st.MaxBytes != 200 {
					t.Fatalf("after %d writes: Bytes = %d, MaxBytes = %d; want ≤ 200 of 200", i+1, st.Bytes, st.MaxBytes)
				}
				mustCheck(t, e)
			}
		})
	}
}

// TestLargestEntryIsAPropertyOfTheConfig guards the promise that what a
// program may store does not depend on the machine: the largest storable
// entry under MaxBytes is the same for every shard count (the default
// count scales with GOMAXPROCS).
func TestLargestEntryIsAPropertyOfTheConfig(t *testing.T) {
	const maxBytes = 256 << 20
	for _, shards := range []int{0, 1, 2, 256, 4096} {
		t.Run("shards="+strconv.Itoa(shards), func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: shards, MaxBytes: maxBytes})
			if _, err := e.Set("v", make([]byte, 3<<20)); err != nil {
				t.Fatalf("3 MiB under a 256 MiB cap: %v", err)
			}
			// The boundary, under a smaller cap: key + value +
			// EntryOverhead = MaxBytes fits, one byte more does not.
			const small = 1 << 20
			e, _ = newTest(t, Config{Shards: shards, MaxBytes: small})
			if _, err := e.Set("k", make([]byte, small-1-EntryOverhead)); err != nil {
				t.Fatalf("an entry of exactly MaxBytes: %v", err)
			}
			e.Delete("k")
			if _, err := e.Set("k", make([]byte, small-EntryOverhead)); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("an entry of MaxBytes+1: err = %v, want ErrTooLarge", err)
			}
		})
	}
}

// TestCapOfNEntriesHoldsN guards the promise that a cap of N entries' worth
// holds exactly N of them, wherever their keys hash: under noeviction the
// (N+1)th write fails; under an evicting policy the engine settles at N.
func TestCapOfNEntriesHoldsN(t *testing.T) {
	const n = 10
	size := int64(3 + 10 + EntryOverhead) // keys "k00".."k99", 10-byte values
	for _, shards := range []int{1, 16, 64, 1024} {
		for _, pol := range []evict.Spec{evict.NoEviction, evict.AllKeysLRU, evict.AllKeysRandom} {
			t.Run(pol.Name+"/shards="+strconv.Itoa(shards), func(t *testing.T) {
				e, _ := newTest(t, Config{Shards: shards, MaxBytes: n * size, Policy: pol})
				stored := 0
				for i := range 3 * n {
					_, err := e.Set("k"+strconv.Itoa(10+i), []byte("0123456789"))
					switch {
					case err == nil:
						stored++
					case errors.Is(err, ErrOutOfMemory) && pol.New == nil && stored == n:
					default:
						t.Fatalf("write %d (%d stored): %v", i+1, stored, err)
					}
					mustCheck(t, e)
				}
				if got := e.Len(); got != n {
					t.Fatalf("Len = %d, want %d", got, n)
				}
			})
		}
	}
}
