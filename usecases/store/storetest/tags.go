package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// runTags checks the rule for the two keys of a Lease (Key, FenceKey) or a
// FlagWrite (Key, AuditKey) (store package doc, "Keys and ownership"):
// both must carry the same non-empty hash tag, the bytes between the
// first '{' and the next '}' (store.KeyTag). Every backend refuses other
// pairs with ErrInvalidArgument, writing nothing, whatever its topology:
// a Redis Cluster must refuse them (the keys may hash to two slots), so a
// single node and the embedded engine refuse them too, and an adapter
// that works on one backend works on every one.
func runTags(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	f := newFixture(t)
	b := f.Backend
	for _, c := range []struct {
		key, other string
		ok         bool
	}{
		{"lease:{a}", "lease:{a}:fence", true},
		{"x{a}y", "{a}", true},
		{"{a}{b}", "{a}:2", true},
		{"}{a}", "{a}}", true},
		{"{a\x00}", "{a\x00}:2", true},
		{"lease:a", "fence:a", false},
		{"a", "a:fence", false},
		{"", "{a}", false},
		{"{a}", "{b}", false},
		{"{}a", "{}a:2", false},
		{"{a", "{a:2", false},
		{"{a}", "a", false},
		{"{a}", "{a", false},
		{"{{a}", "{a}", false}, // tags "{a" and "a"
	} {
		for _, kind := range []string{"Lease", "FlagWrite"} {
			var err error
			if kind == "Lease" {
				d := &store.Lease{Op: store.LeaseAcquire, Key: c.key, FenceKey: c.other, Holder: "A", TTL: time.Hour}
				err = b.Lease(ctx, d)
				if err == nil && !d.OK {
					t.Errorf("Lease (%q, %q): not acquired", c.key, c.other)
				}
			} else {
				d := &store.FlagWrite{Key: c.other, AuditKey: c.key, Value: []byte("on"), Audit: []byte("rec")}
				err = b.FlagWrite(ctx, d)
				if err == nil && !d.OK {
					t.Errorf("FlagWrite (%q, %q): not written", c.other, c.key)
				}
			}
			switch {
			case c.ok && err != nil:
				t.Errorf("%s with keys %q and %q (one hash tag): got %v, want it done", kind, c.key, c.other, err)
			case !c.ok && !errors.Is(err, store.ErrInvalidArgument):
				t.Errorf("%s with keys %q and %q: got %v, want ErrInvalidArgument", kind, c.key, c.other, err)
			}
			for _, k := range []string{c.key, c.other} {
				// A lease record is ErrCorrupt for Get on Redis: an error
				// is a key that exists.
				if _, found, err := b.Get(ctx, k); (found || err != nil) && !c.ok {
					t.Errorf("%s with keys %q and %q: the refused call wrote %q", kind, c.key, c.other, k)
				}
				if _, err := b.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
