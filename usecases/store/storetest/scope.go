package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/store"
)

// runScopes checks the scoping rule (store package doc, "Scopes"): a
// prefix is a name followed by one ':', with no other ':' and no '{', and
// not "tide:"; the backend refuses any other (ErrInvalidArgument), nested
// ones ("a:b:") included. Backends with different prefixes on one store
// never reach each other's keys, whatever key they are given: keys that
// look like a scope boundary ("b:x" in scope "a:", ":x", "", a key with
// braces or a NUL byte) are written in every scope and each scope reads
// back only its own; a delete in one scope leaves the others' keys; leases
// (fence included) and limiters of the same name are separate.
func runScopes(t *testing.T, newFixture NewFunc) {
	ctx := context.Background()
	f := newFixture(t)
	if f.Scope == nil {
		t.Skip("the fixture makes no scoped backends")
	}
	for _, p := range []string{"a", "a:b:", "a:b", ":", "::", "a::", ":a:", "a{:", "{a}:", "a{b}:", "tide:"} {
		if b, err := f.Scope(p); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("prefix %q: got (%v, %v), want ErrInvalidArgument", p, b, err)
		}
	}
	// Every prefix a backend could be given to reach another's keys: the
	// valid ones must be accepted, the nested ones must not be, and among
	// those accepted no two may share a key.
	var scopes []string
	backends := map[string]store.Backend{}
	for _, p := range []string{"a:", "b:", "ab:", "a-b:", "a}b:", "a\x00b:", "a:b:", "a:b:c:", "a:x:"} {
		b, err := f.Scope(p)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("prefix %q: got %v, want a backend or ErrInvalidArgument", p, err)
			}
			continue
		}
		scopes = append(scopes, p)
		backends[p] = b
	}
	for _, p := range []string{"a:", "b:", "ab:", "a-b:", "a}b:", "a\x00b:"} {
		if backends[p] == nil {
			t.Fatalf("prefix %q refused, want it accepted", p)
		}
	}
	keys := []string{"", "x", "b:x", "b:", ":x", ":", "a:x", "ab:x", "a:b:x", "{x}", "}x", "x\x00y", "\x00", "b:{x}", "-b:x"}
	value := func(p, k string) string { return fmt.Sprintf("%q|%q", p, k) }
	for _, p := range scopes {
		for _, k := range keys {
			if _, _, err := backends[p].Set(ctx, k, []byte(value(p, k)), store.SetOptions{TTL: store.NoTTL}); err != nil {
				t.Fatalf("scope %q: Set(%q): %v", p, k, err)
			}
		}
	}
	readBack := func(skip string) {
		t.Helper()
		for _, p := range scopes {
			if p == skip {
				continue
			}
			for _, k := range keys {
				it, found, err := backends[p].Get(ctx, k)
				if err != nil || !found || string(it.Value) != value(p, k) {
					t.Errorf("scope %q, key %q: got (%q, %v, %v), want its own value %q (another scope wrote or deleted it)", p, k, it.Value, found, err, value(p, k))
				}
			}
		}
	}
	readBack("")
	a := backends["a:"]
	for _, k := range keys {
		if ok, err := a.Delete(ctx, k); !ok || err != nil {
			t.Errorf("scope \"a:\": Delete(%q): got (%v, %v), want (true, nil)", k, ok, err)
		}
	}
	readBack("a:")
	for _, p := range scopes {
		d := &store.Lease{Op: store.LeaseAcquire, Key: "lease:{r}", FenceKey: "lease:{r}:fence", Holder: p, TTL: time.Hour}
		if err := backends[p].Lease(ctx, d); err != nil || !d.OK || d.Current.Token != 1 {
			t.Errorf("scope %q: lease acquire: got (ok %v, token %d, %v), want its own first token", p, d.OK, d.Current.Token, err)
		}
		if d.Key != "lease:{r}" || d.FenceKey != "lease:{r}:fence" {
			t.Errorf("scope %q: the lease decision's keys came back as (%q, %q), want the caller's", p, d.Key, d.FenceKey)
		}
		// Scope "a:" also takes the lease scope "a:b:" would have, if it
		// existed: a lease of its own, its own first token.
		if p == "a:" {
			d := &store.Lease{Op: store.LeaseAcquire, Key: "b:lease:{r}", FenceKey: "b:lease:{r}:fence", Holder: p, TTL: time.Hour}
			if err := a.Lease(ctx, d); err != nil || !d.OK || d.Current.Token != 1 {
				t.Errorf("scope \"a:\": lease acquire of \"b:lease:{r}\": got (ok %v, token %d, %v), want its own first token", d.OK, d.Current.Token, err)
			}
		}
		w := &store.FixedWindow{Key: "fw", Limit: 1, Window: time.Hour, Cost: 1}
		if err := backends[p].FixedWindow(ctx, w); err != nil || !w.Allowed {
			t.Errorf("scope %q: first admission of its window: got (%v, %v), want allowed", p, w.Allowed, err)
		}
	}
}
