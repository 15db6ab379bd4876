package storetest

import (
	"errors"
	"strings"
	"testing"
)

// AdapterPrefix checks an adapter's Config.Prefix against the rule every
// adapter shares (usecases/internal/keys.CheckPrefix, documented on each
// Config.Prefix): build makes the adapter with the given Prefix and returns
// New's error; own is the adapter's default prefix ("tide:cache:"), other
// another adapter's ("tide:sess:"); a refused prefix must be an error
// matching invalid (the package's ErrInvalidConfig). The cases: the
// default and names below it, an application's, a lone '}', the longest
// accepted; and refused, an opening brace, control bytes, a space, bytes
// outside ASCII, one byte too long, 64 KiB, "tide:", another adapter's
// namespace and a name inside it, the Redis backend's reserved
// "tide:ver:", and a prefix ending in it after a scope's name.
func AdapterPrefix(t *testing.T, own, other string, invalid error, build func(prefix string) error) {
	t.Helper()
	name := strings.TrimSuffix(strings.TrimPrefix(own, "tide:"), ":") // "cache"
	for _, c := range []struct {
		name, prefix string
		ok           bool
	}{
		{"empty (the default)", "", true},
		{"default", own, true},
		{"own namespace", own + "eu:", true},
		{"application's", "shop:" + name + ":", true},
		{"closing brace", "shop}:", true},
		{"longest", strings.Repeat("p", 128), true},
		{"opening brace", "shop{1}:", false},
		{"brace at the end", "shop:{", false},
		{"newline", "shop:\n", false},
		{"NUL", "shop\x00:", false},
		{"space", "shop " + name + ":", false},
		{"not ASCII", "caf\xc3\xa9:", false},
		{"too long", strings.Repeat("p", 129), false},
		{"64 KiB", strings.Repeat("p", 64<<10), false},
		{"every adapter's namespace", "tide:", false},
		{"another adapter's namespace", other, false},
		{"inside another adapter's namespace", other + name + ":", false},
		{"Redis version counters", "tide:ver:", false},
		{"a scope's version counters", "a:tide:ver:", false},
	} {
		err := build(c.prefix)
		if c.ok && err != nil || !c.ok && !errors.Is(err, invalid) {
			t.Errorf("%s: New with Prefix %.40q (%d bytes) got %v, want accepted %v (else %v)", c.name, c.prefix, len(c.prefix), err, c.ok, invalid)
		}
	}
}
