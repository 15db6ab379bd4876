package engine

import (
	"testing"
)

// TestKeyHashIsKeyedAndAgreesForStringsAndBytes checks what the engine
// relies on of keyHash: a key hashes the same as a string (shardFor) and
// as stored bytes (shard.hash), the empty key included; and two engines'
// seeds hash the same keys differently (a seed that was not random, or
// not used, would give equal hashes: keys found to collide in one engine
// would collide in all).
func TestKeyHashIsKeyedAndAgreesForStringsAndBytes(t *testing.T) {
	a, b := newKeySeed(), newKeySeed()
	sa := &shard{seed: a}
	keys := []string{"", "a", "key-00000000001", "key-000000000001", "a key longer than sixteen bytes, and than thirty-two", string(make([]byte, 129))}
	same := 0
	for _, k := range keys {
		if got, want := sa.hash([]byte(k)), a.keyHash(k); got != want {
			t.Errorf("key %q: hash of the bytes %#x, of the string %#x: want equal", k, got, want)
		}
		if a.keyHash(k) == b.keyHash(k) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("%d of %d keys hash the same under two engines' seeds, want 0", same, len(keys))
	}
	for i, k := range keys {
		for _, l := range keys[i+1:] {
			if a.keyHash(k) == a.keyHash(l) {
				t.Errorf("keys %q and %q: equal hashes %#x", k, l, a.keyHash(k))
			}
		}
	}
}
