package engine

import (
	"bytes"
	"strings"
	"testing"
)

// TestReadsFindKeysOfEveryLength reads keys of every length up to 41 bytes
// through every optimistic read path: the key compare reads whole words
// and then the tail of a key whose length is not a multiple of 8, so a
// mistake in either part misses keys of some lengths. (That it tells keys
// apart is TestProbeTellsKeysApartUnderOneHash's: two keys rarely share a
// table tag, so a read of another key seldom reaches the compare.)
func TestReadsFindKeysOfEveryLength(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for n := 1; n <= 41; n++ {
		key := strings.Repeat("k", n-1) + "a"
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
	}
}

// TestProbeTellsKeysApartUnderOneHash hands probe, with a stored key's own
// hash (so it reaches the key compare whatever the tags), keys of the same
// length that differ from it in one byte, at every position: every word
// and every byte of the tail must be compared.
func TestProbeTellsKeysApartUnderOneHash(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for n := 0; n <= 41; n++ {
		key := strings.Repeat("k", n)
		if _, err := e.Set(key, []byte("v")); err != nil {
			t.Fatal(err)
		}
		s, h := e.shardFor(key)
		if _, _, _, _, _, r := s.probe(key, h); r != peekHit {
			t.Errorf("len %d: probe of the key: got %v, want a hit (%v)", n, r, peekHit)
		}
		for i := range n {
			b := []byte(key)
			b[i] = 'x'
			if _, _, _, _, _, r := s.probe(string(b), h); r != peekMiss {
				t.Errorf("len %d: probe of a key differing at byte %d, under the key's hash: got %v, want a miss (%v)", n, i, r, peekMiss)
			}
		}
	}
}
