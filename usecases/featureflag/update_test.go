package featureflag_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tidekv/tide/usecases/featureflag"
	"github.com/tidekv/tide/usecases/store"
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
			s, err := featureflag.New(featureflag.Config{Backend: newPerKeyBackend()})
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

// perKeyBackend is a featureflag.Backend whose versions count per key, as
// the store contract allows (a version is never reused for its key;
// versions of different keys are not ordered, and may be equal): Redis's
// per-slot counters give two flags in different slots the same versions.
type perKeyBackend struct {
	mu   sync.Mutex
	vals map[string]store.Item
	ver  map[string]uint64
}

func newPerKeyBackend() *perKeyBackend {
	return &perKeyBackend{vals: map[string]store.Item{}, ver: map[string]uint64{}}
}

func (b *perKeyBackend) Now(context.Context) (time.Time, error) {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil
}

func (b *perKeyBackend) Get(_ context.Context, key string) (store.Item, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	it, ok := b.vals[key]
	return it, ok, nil
}

func (b *perKeyBackend) FlagWrite(ctx context.Context, d *store.FlagWrite) error {
	if err := store.Begin(ctx, d); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d.OK, d.Version, d.Current = false, 0, b.vals[d.Key].Version
	if d.Current != d.IfVersion {
		return nil
	}
	log, err := store.AppendLog(b.vals[d.AuditKey].Value, d.Audit, d.AuditKeep)
	if err != nil {
		return err
	}
	for k, v := range map[string][]byte{d.Key: d.Value, d.AuditKey: log} {
		b.ver[k]++
		b.vals[k] = store.Item{Value: v, Version: b.ver[k]}
	}
	d.OK, d.Version, d.Current = true, b.ver[d.Key], 0
	return nil
}
