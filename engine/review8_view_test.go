package engine

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// TestReview8ViewHoldsItsBytesWhileOtherGoroutinesOverwrite: while a View's
// fn runs (blocked) on one goroutine, another overwrites the key it views
// with values of the same length (the in-place path that skips storing
// the length), shorter and longer within the padded size, empty, longer
// than the padded size, with a TTL given to a record without a deadline
// word, and with a TTL kept; reads see each new value, Check passes after
// each write, and fn's bytes never change. After fn returns, overwrites
// of the same length are in place again (no record appended).
func TestReview8ViewHoldsItsBytesWhileOtherGoroutinesOverwrite(t *testing.T) {
	type w struct {
		n int
		o SetOptions
	}
	cases := []struct {
		name  string
		first int
		ws    []w
	}{
		{"same length", 64, []w{{64, SetOptions{TTL: NoTTL}}, {64, SetOptions{TTL: NoTTL}}, {64, SetOptions{KeepTTL: true}}}},
		{"within the padded size", 64, []w{{57, SetOptions{TTL: NoTTL}}, {64, SetOptions{TTL: NoTTL}}, {60, SetOptions{TTL: NoTTL}}, {63, SetOptions{TTL: NoTTL}}}},
		{"shrink then grow", 64, []w{{8, SetOptions{TTL: NoTTL}}, {64, SetOptions{TTL: NoTTL}}, {0, SetOptions{TTL: NoTTL}}, {1, SetOptions{TTL: NoTTL}}, {300, SetOptions{TTL: NoTTL}}}},
		{"TTL given, kept, cleared", 64, []w{{64, SetOptions{TTL: time.Hour}}, {64, SetOptions{KeepTTL: true}}, {64, SetOptions{TTL: NoTTL}}, {64, SetOptions{TTLOnCreate: true, TTL: time.Minute}}}},
		{"empty value viewed", 0, []w{{0, SetOptions{TTL: NoTTL}}, {8, SetOptions{TTL: NoTTL}}, {0, SetOptions{TTL: NoTTL}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newTest(t, Config{Shards: 1})
			gen := byte(1)
			val := func(n int) []byte { gen++; return bytes.Repeat([]byte{gen}, n) }
			first := val(c.first)
			mustSet(t, e, "k", string(first))
			mustSet(t, e, "other", "x")
			in, goOn, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				var err error
				ok := e.View("k", func(v []byte) {
					close(in)
					<-goOn
					if !bytes.Equal(v, first) {
						err = fmt.Errorf("fn's bytes changed: %d bytes, first %v", len(v), v[:min(len(v), 8)])
					}
				})
				if !ok {
					err = fmt.Errorf("View missed")
				}
				done <- err
			}()
			<-in
			for i, wr := range c.ws {
				v := val(wr.n)
				if _, _, err := e.SetWith("k", v, wr.o); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
				if got, ok := e.Get("k"); !ok || !bytes.Equal(got, v) {
					t.Fatalf("write %d: Get = %d bytes, want %d", i, len(got), len(v))
				}
				// Another View of the new record, which returns.
				if !e.View("k", func(got []byte) {
					if !bytes.Equal(got, v) {
						t.Errorf("write %d: a second View got %d bytes, want %d", i, len(got), len(v))
					}
				}) {
					t.Fatalf("write %d: second View missed", i)
				}
				mustCheck(t, e)
			}
			close(goOn)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// No View in progress: same-length overwrites are in place.
			s, _ := e.shardFor("k")
			last := c.ws[len(c.ws)-1].n
			s.mu.RLock()
			arenaLen := len(s.arena)
			s.mu.RUnlock()
			for i := range 3 {
				v := val(last)
				if _, _, err := e.SetWith("k", v, SetOptions{KeepTTL: true}); err != nil {
					t.Fatal(err)
				}
				if got, ok := e.Get("k"); !ok || !bytes.Equal(got, v) {
					t.Fatalf("after the View, write %d: Get = %d bytes, want %d", i, len(got), len(v))
				}
				mustCheck(t, e)
			}
			s.mu.RLock()
			grew := len(s.arena) - arenaLen
			s.mu.RUnlock()
			if grew > 0 {
				t.Errorf("same-length overwrites with no View in progress appended %d arena bytes", grew)
			}
		})
	}
}
