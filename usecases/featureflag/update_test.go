package featureflag_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// Update's prev is the Flag as read: its exported fields are the caller's
// to change, but the write must still be judged against what was read.
// Editing prev.State in place and passing it as next (the natural way to
// change one field) must audit the state as read as Before; a prev
// renamed to another flag must not overwrite that flag (versions are
// per key: another flag may be at the same one); an edited Revision must
// not move the flag's revision count back.
func TestUpdateJudgesPrevAsRead(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		edit func(f *featureflag.Flag)
		// want: the error, or nil for a write audited with Before as read
		want error
	}{
		{"StateEditedInPlace", func(f *featureflag.Flag) { f.Rollout = 5000; f.Enabled = true }, nil},
		{"Renamed", func(f *featureflag.Flag) { f.Name = "b" }, featureflag.ErrInvalidFlag},
		{"RevisionRewound", func(f *featureflag.Flag) { f.Revision = 0 }, featureflag.ErrInvalidFlag},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := featureflag.New(featureflag.Config{Backend: storetest.NewPerKeyBackend()})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// a and b at revision 1, both at store version 1.
			if _, err := s.Create(ctx, "a", featureflag.State{Rollout: 10}, "ana", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Create(ctx, "b", featureflag.State{Enabled: true, Rollout: 20}, "ana", ""); err != nil {
				t.Fatal(err)
			}
			bBefore, _, _ := s.Get(ctx, "b")
			a, _, err := s.Get(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			asRead := a.State
			c.edit(&a)
			next := a.State
			next.Salt = "new"
			_, err = s.Update(ctx, a, next, "eve", "edit")
			if !errors.Is(err, c.want) {
				t.Errorf("Update: got %v, want %v", err, c.want)
			}
			if bNow, _, _ := s.Get(ctx, "b"); bNow.State != bBefore.State || bNow.Revision != bBefore.Revision {
				t.Errorf("flag b: got %+v revision %d, want untouched %+v revision %d", bNow.State, bNow.Revision, bBefore.State, bBefore.Revision)
			}
			hist, err := s.History(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			if c.want != nil {
				if len(hist) != 1 {
					t.Errorf("flag a's history: got %d records, want 1 (nothing written)", len(hist))
				}
				return
			}
			last := hist[len(hist)-1]
			if last.Revision != 2 || last.Before == nil || *last.Before != asRead || last.After != next {
				t.Errorf("audit record: got revision %d before %+v after %+v, want revision 2 before %+v (as read) after %+v", last.Revision, last.Before, last.After, asRead, next)
			}
		})
	}
}
