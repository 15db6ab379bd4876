package engine

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadsFindKeysOfEveryLength reads keys of every length up to 41 bytes
// through every optimistic read path: the key compare reads whole words
// and then the tail of a key whose length is not a multiple of 8, so a
// mistake in either part misses keys of some lengths, or finds a key that
// differs only in its last byte.
func TestReadsFindKeysOfEveryLength(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for n := 1; n <= 41; n++ {
		key := strings.Repeat("k", n-1) + "a"
		other := strings.Repeat("k", n-1) + "b" // same words but the last byte
		val := []byte(key + "-value")
		if _, err := e.Set(key, val); err != nil {
			t.Fatal(err)
		}
		if got, ok := e.Get(key); !ok || !bytes.Equal(got, val) {
			t.Errorf("len %d: Get = %q, %v; want %q, true", n, got, ok, val)
		}
		if got, ok := e.AppendGet(nil, key); !ok || !bytes.Equal(got, val) {
			t.Errorf("len %d: AppendGet = %q, %v; want %q, true", n, got, ok, val)
		}
		var viewed []byte
		if ok := e.View(key, func(v []byte) { viewed = append(viewed, v...) }); !ok || !bytes.Equal(viewed, val) {
			t.Errorf("len %d: View saw %q, %v; want %q, true", n, viewed, ok, val)
		}
		if it, ok := e.GetItem(key); !ok || !bytes.Equal(it.Value, val) {
			t.Errorf("len %d: GetItem = %q, %v; want %q, true", n, it.Value, ok, val)
		}
		if got, ok := e.Get(other); ok {
			t.Errorf("len %d: Get(%q) = %q, true; want a miss (only %q is stored)", n, other, got, key)
		}
	}
}
