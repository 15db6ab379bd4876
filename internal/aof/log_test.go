package aof_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tidekv/tide/internal/aof"
)

// state is the reference model: what replaying records must produce.
type state map[string]aof.Record

func (s state) apply(r *aof.Record) error {
	switch r.Op {
	case aof.OpSet:
		c := *r
		c.Value = append([]byte(nil), r.Value...)
		s[r.Key] = c
	case aof.OpRemove:
		if e, ok := s[r.Key]; ok && (r.Version == aof.NoVersion || r.Version == e.Version) {
			delete(s, r.Key)
		}
	case aof.OpMeta:
		if e, ok := s[r.Key]; ok {
			e.Deadline, e.Pinned = r.Deadline, r.Pinned
			s[r.Key] = e
		}
	case aof.OpBatch:
		for i := range r.Batch {
			if err := s.apply(&r.Batch[i]); err != nil {
				return err
			}
		}
	case aof.OpVersions:
	default:
		return fmt.Errorf("unexpected %v", r.Op)
	}
	return nil
}

func (s state) equal(t testing.TB, want state) {
	t.Helper()
	if len(s) != len(want) {
		t.Errorf("got %d keys, want %d", len(s), len(want))
	}
	for k, w := range want {
		g, ok := s[k]
		if !ok {
			t.Errorf("key %q missing, want version %d", k, w.Version)
			continue
		}
		if string(g.Value) != string(w.Value) || g.Version != w.Version || g.Deadline != w.Deadline || g.Pinned != w.Pinned {
			t.Errorf("key %q = %+v, want %+v", k, g, w)
		}
	}
	for k := range s {
		if _, ok := want[k]; !ok {
			t.Errorf("key %q present, want absent", k)
		}
	}
}

func open(t testing.TB, cfg aof.Config, now int64) (*aof.Log, state, aof.Recovery) {
	t.Helper()
	st := state{}
	l, rep, err := aof.Open(cfg, now, st.apply)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l, st, rep
}

func set(k, v string, ver uint64) *aof.Record {
	return &aof.Record{Op: aof.OpSet, Key: k, Value: []byte(v), Version: ver}
}

func TestAppendReopenRoundTrip(t *testing.T) {
	for _, p := range []aof.SyncPolicy{aof.SyncAlways, aof.SyncEverySecond, aof.SyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			cfg := aof.Config{Dir: t.TempDir(), Sync: p}
			l, st, _ := open(t, cfg, 0)
			want := state{}
			recs := []*aof.Record{
				set("a", "1", 1),
				{Op: aof.OpSet, Key: "b", Value: []byte("2"), Version: 2, Deadline: 5000, Pinned: true},
				{Op: aof.OpMeta, Key: "a", Deadline: 9000},
				{Op: aof.OpRemove, Key: "b", Version: 2, Cause: aof.CauseEvicted},
				{Op: aof.OpBatch, Batch: []aof.Record{*set("c", "3", 3), {Op: aof.OpRemove, Key: "a", Version: 1, Cause: aof.CauseDeleted}, *set("", "", 4)}},
				{Op: aof.OpVersions, Versions: []uint64{10, 20}},
				{Op: aof.OpSet, Key: "due", Value: []byte("x"), Version: 5, Deadline: 100},
			}
			for _, r := range recs {
				if err := l.Append(r); err != nil {
					t.Fatalf("Append(%v): %v", r.Op, err)
				}
				want.apply(r)
			}
			if err := l.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if err := l.Append(set("z", "", 9)); !errors.Is(err, aof.ErrClosed) {
				t.Fatalf("Append after Close = %v, want ErrClosed", err)
			}
			_ = st
			l2, got, rep := open(t, cfg, 100)
			defer l2.Close()
			delete(want, "due")
			got.equal(t, want)
			if rep.Records != len(recs) || rep.Due != 1 || rep.MaxVersion != 20 || rep.TornBytes != 0 {
				t.Errorf("recovery = %+v, want %d records, 1 due, max version 20, no torn bytes", rep, len(recs))
			}
		})
	}
}

func TestConcurrentAppendsGroupCommit(t *testing.T) {
	cfg := aof.Config{Dir: t.TempDir(), Sync: aof.SyncAlways}
	l, _, _ := open(t, cfg, 0)
	var wg sync.WaitGroup
	const workers, each = 8, 200
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := l.Append(set(fmt.Sprintf("k%d-%d", w, i), "v", uint64(w*each+i+1))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { // Size races appends (run with -race)
		defer close(done)
		for range 100 {
			if _, incr := l.Size(); incr < 16 {
				t.Errorf("Size = %d, want at least the header", incr)
			}
		}
	}()
	wg.Wait()
	<-done
	l.Close()
	l2, got, rep := open(t, cfg, 0)
	defer l2.Close()
	if len(got) != workers*each || rep.Records != workers*each {
		t.Fatalf("got %d keys, %d records, want %d", len(got), rep.Records, workers*each)
	}
}
