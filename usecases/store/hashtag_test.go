package store_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidekv/tide/usecases/store"
)

func TestHashTag(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"orders", "{orders}"},
		{"}beta", "{%7Dbeta}"},
		{"{", "{%7B}"},
		{"a{b}c", "{a%7Bb%7Dc}"},
		{"50%", "{50%25}"},
		{"%7D", "{%257D}"},
		{"", "{%}"},
	} {
		if got := store.HashTag(c.name); got != c.want {
			t.Errorf("HashTag(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestHashTagProperties: the tag is one non-empty brace-free run between
// its own braces (so Redis Cluster hashes exactly it), and different names
// get different tags.
func TestHashTagProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alpha := rapid.SampledFrom([]byte("ab%{}7BD25:"))
		gen := rapid.Custom(func(t *rapid.T) string {
			return string(rapid.SliceOfN(alpha, 0, 8).Draw(t, "b"))
		})
		a, b := gen.Draw(t, "a"), gen.Draw(t, "b")
		ta := store.HashTag(a)
		inner := ta[1 : len(ta)-1]
		if ta[0] != '{' || ta[len(ta)-1] != '}' || inner == "" || strings.ContainsAny(inner, "{}") {
			t.Fatalf("HashTag(%q) = %q: want braces around a non-empty brace-free run", a, ta)
		}
		if a != b && ta == store.HashTag(b) {
			t.Fatalf("HashTag(%q) = HashTag(%q) = %q", a, b, ta)
		}
	})
}
