package aof_test

import (
	"errors"
	"maps"
	"slices"
	"syscall"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tidekv/tide/internal/aof"
	"github.com/tidekv/tide/internal/aof/faultfs"
)

// recoverNow is the wall clock the model recovers at.
const recoverNow int64 = 1_000_000

// live drops the entries due at now: what recovery must leave.
func (s state) live(now int64) state {
	out := state{}
	for k, r := range s {
		if r.Deadline == aof.NoDeadline || r.Deadline > now {
			out[k] = r
		}
	}
	return out
}

func (s state) same(o state) bool {
	if len(s) != len(o) {
		return false
	}
	for k, a := range s {
		b, ok := o[k]
		if !ok || string(a.Value) != string(b.Value) || a.Version != b.Version || a.Deadline != b.Deadline || a.Pinned != b.Pinned {
			return false
		}
	}
	return true
}

// stateSource is a Source over a model state.
type stateSource struct {
	st       state
	versions []uint64
}

func (s stateSource) Versions() []uint64 { return s.versions }

func (s stateSource) Records(emit func(*aof.Record) error) error {
	for _, k := range slices.Sorted(maps.Keys(s.st)) {
		r := s.st[k]
		if err := emit(&r); err != nil {
			return err
		}
	}
	return nil
}

// genRecord draws a record as the engine would log it: a TTL change
// (OpMeta) only for a key that exists in cur, the engine's state.
func genRecord(t *rapid.T, version *uint64, cur state, inBatch bool) aof.Record {
	key := rapid.SampledFrom([]string{"", "a", "b", "c", "dd", "k\x00\xff"}).Draw(t, "key")
	deadline := rapid.SampledFrom([]int64{aof.NoDeadline, aof.NoDeadline, recoverNow - 1, recoverNow, recoverNow + 1000}).Draw(t, "deadline")
	max := 6
	if inBatch {
		max = 4
	}
	switch rapid.IntRange(0, max).Draw(t, "op") {
	case 0, 1:
		*version++
		n := rapid.SampledFrom([]int{0, 1, 7, 300, 5000}).Draw(t, "vlen")
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(*version) + byte(i)
		}
		return aof.Record{Op: aof.OpSet, Key: key, Value: v, Version: *version, Deadline: deadline, Pinned: rapid.Bool().Draw(t, "pin")}
	case 2:
		// The version of the key's current incarnation, usually; or a
		// stale one (a late expiry), or none.
		v := cur[key].Version
		switch rapid.IntRange(0, 4).Draw(t, "removeVersion") {
		case 0:
			v = aof.NoVersion
		case 1:
			if *version > 0 { // a version issued before: removals carry no others
				v = rapid.Uint64Range(1, *version).Draw(t, "staleVersion")
			}
		}
		return aof.Record{Op: aof.OpRemove, Key: key, Version: v, Cause: aof.Cause(rapid.IntRange(1, 3).Draw(t, "cause"))}
	case 3, 4:
		if len(cur) == 0 {
			return genRecord(t, version, cur, inBatch)
		}
		key = rapid.SampledFrom(slices.Sorted(maps.Keys(cur))).Draw(t, "metaKey")
		return aof.Record{Op: aof.OpMeta, Key: key, Deadline: deadline, Pinned: rapid.Bool().Draw(t, "pin")}
	case 5:
		n := rapid.IntRange(0, 4).Draw(t, "batch")
		r := aof.Record{Op: aof.OpBatch, Batch: make([]aof.Record, n)}
		for i := range r.Batch {
			r.Batch[i] = genRecord(t, version, cur, true)
		}
		return r
	default:
		return aof.Record{Op: aof.OpVersions, Versions: []uint64{*version, *version + 1}}
	}
}

// TestCrashModel runs random appends, syncs, rewrites, injected faults,
// clean restarts and crashes (immediate, or after a random number of file
// operations, so that every step of a rewrite and of a group commit gets
// interrupted) against a reference: after every restart the recovered
// state must be the state of some prefix of the records attempted, at
// least as long as what was acknowledged durable (every acknowledged
// record with SyncAlways; up to the last Sync, rewrite switch or Close
// otherwise), and MaxVersion must cover every version in it.
func TestCrashModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		policy := rapid.SampledFrom([]aof.SyncPolicy{aof.SyncAlways, aof.SyncEverySecond, aof.SyncNo}).Draw(t, "policy")
		fsys := faultfs.New()
		cfg := func() aof.Config {
			return aof.Config{FS: fsys, Sync: policy, SyncInterval: time.Hour}
		}
		var hist []aof.Record // records attempted, in order; the last may be of unknown outcome
		cur := state{}        // the engine's state: the last recovery's, then hist applied
		floor := 0            // hist[:floor] is durable
		var version uint64
		l, _, err := aof.Open(cfg(), recoverNow, state{}.apply)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}

		stateAt := func(k int) state {
			st := state{}
			for i := range hist[:k] {
				st.apply(&hist[i])
			}
			return st
		}
		restart := func(crash bool) {
			l.Close()
			if crash || fsys.Crashed() {
				fsys = fsys.Crash(rapid.Uint64().Draw(t, "seed"))
			} else {
				fsys.CrashAfter(-1)
				fsys.SetHook(nil)
			}
			got := state{}
			var rep aof.Recovery
			l, rep, err = aof.Open(cfg(), recoverNow, got.apply)
			if err != nil {
				t.Fatalf("reopen (crash %v) after %d records, %d durable: %v", crash, len(hist), floor, err)
			}
			// The smallest matching prefix: the log holds at least it (a
			// longer prefix with the same state may have netted out).
			for k := floor; k <= len(hist); k++ {
				if want := stateAt(k).live(recoverNow); want.same(got) {
					for i := range hist[:floor] {
						if v := hist[i].Version; v > rep.MaxVersion {
							t.Fatalf("MaxVersion %d < version %d of a durable record", rep.MaxVersion, v)
						}
					}
					hist = hist[:k]
					floor = k
					cur = got
					return
				}
			}
			t.Fatalf("recovered %d keys (%+v); matches no prefix of %d records at least %d long; want %v",
				len(got), rep, len(hist), floor, stateAt(len(hist)).live(recoverNow))
		}

		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			if !fsys.Crashed() {
				if err := l.Check(); err != nil {
					t.Fatal(err)
				}
			}
			switch rapid.IntRange(0, 9).Draw(t, "action") {
			default:
				r := genRecord(t, &version, cur, false)
				hist = append(hist, r)
				err := l.Append(&r)
				switch {
				case err == nil:
					cur.apply(&r)
					if policy == aof.SyncAlways {
						floor = len(hist)
					}
				case errors.Is(err, faultfs.ErrCrashed):
					restart(true)
				case errors.Is(err, aof.ErrFailed):
					restart(rapid.Bool().Draw(t, "crash"))
				default:
					hist = hist[:len(hist)-1] // cut off again: not in the log
				}
			case 4:
				if err := l.Sync(); err == nil {
					floor = len(hist)
				} else if errors.Is(err, faultfs.ErrCrashed) {
					restart(true)
				} else {
					restart(rapid.Bool().Draw(t, "crash"))
				}
			case 5:
				src := stateSource{st: stateAt(len(hist)), versions: []uint64{version}}
				if _, err := l.Rewrite(src); err == nil {
					floor = len(hist)
				} else if l.Err() != nil || errors.Is(err, faultfs.ErrCrashed) {
					restart(true)
				}
			case 6:
				restart(true)
			case 7:
				if err := l.Close(); err == nil {
					floor = len(hist)
				}
				restart(false)
			case 8:
				fsys.CrashAfter(rapid.IntRange(0, 12).Draw(t, "crashAfter"))
			case 9:
				op := rapid.SampledFrom([]faultfs.Op{faultfs.OpWrite, faultfs.OpSync, faultfs.OpTruncate, faultfs.OpRename, faultfs.OpSyncDir, faultfs.OpCreate}).Draw(t, "faultOp")
				skip := rapid.IntRange(0, 3).Draw(t, "faultSkip")
				fault := &faultfs.Fault{
					Err:     rapid.SampledFrom([]error{syscall.EIO, syscall.ENOSPC, nil}).Draw(t, "faultErr"),
					Partial: rapid.IntRange(0, 64).Draw(t, "partial"),
				}
				if fault.Err == nil && op != faultfs.OpWrite {
					fault.Err = syscall.EIO
				}
				fired := false
				fsys.SetHook(func(o faultfs.Op, name string) *faultfs.Fault {
					if o != op || fired {
						return nil
					}
					if skip > 0 {
						skip--
						return nil
					}
					fired = true
					return fault
				})
			}
		}
		restart(true)
		l.Close()
	})
}
