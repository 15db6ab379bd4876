package evict

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestReviewEvictTTLExactOnSmallSets checks VolatileTTL against the
// obvious model where its sampler scans every entry (up to
// sampleCount+poolSize of them): Victim returns an entry with the nearest
// positive deadline, or, if none has one, any entry; deadlines set by
// Add, Update and SetDeadline (tracked or not, at the ends of int64).
func TestReviewEvictTTLExactOnSmallSets(t *testing.T) {
	deadlines := []int64{math.MinInt64, -1, 0, 1, 2, 1e9, math.MaxInt64 - 1, math.MaxInt64}
	rapid.Check(t, func(t *rapid.T) {
		p := newTTL()
		live := map[Handle]int64{}
		handle := rapid.Custom(func(t *rapid.T) Handle { return Handle(rapid.IntRange(0, sampleCount+poolSize+3).Draw(t, "h")) })
		dl := rapid.SampledFrom(deadlines)
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				h, d := handle.Draw(t, "h"), dl.Draw(t, "d")
				p.Add(h, Entry{Deadline: d})
				live[h] = d
			},
			"update": func(t *rapid.T) {
				h, d := handle.Draw(t, "h"), dl.Draw(t, "d")
				p.Update(h, Entry{Deadline: d})
				live[h] = d
			},
			"setDeadline": func(t *rapid.T) {
				h, d := handle.Draw(t, "h"), dl.Draw(t, "d")
				p.SetDeadline(h, d)
				if _, ok := live[h]; ok {
					live[h] = d
				}
			},
			"remove": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				p.Remove(h)
				delete(live, h)
			},
			"victim": func(t *rapid.T) {
				if len(live) > sampleCount+poolSize {
					return
				}
				h, ok := p.Victim(0)
				if ok != (len(live) > 0) {
					t.Fatalf("Victim ok = %v with %d live", ok, len(live))
				}
				if !ok {
					return
				}
				d, tracked := live[h]
				if !tracked {
					t.Fatalf("Victim = %d, not tracked", h)
				}
				best := int64(0)
				for _, x := range live {
					if x > 0 && (best == 0 || x < best) {
						best = x
					}
				}
				if best > 0 && d != best {
					t.Fatalf("Victim = %d with deadline %d, want the nearest positive deadline %d (%v)", h, d, best, live)
				}
			},
			"": func(t *rapid.T) {
				if err := p.check(); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}

// TestReviewEvictLFUExactOnSmallSets checks AllKeysLFU, with every hit
// counted and no decay, against the obvious model where its sampler scans
// every entry: a new entry starts at 5, each read or write adds one up to
// 255 (a second Add of a tracked handle is a write), a read of a handle
// not tracked changes nothing, and Victim returns an entry with the
// lowest count.
func TestReviewEvictLFUExactOnSmallSets(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := newLFU(LFUConfig{LogFactor: -1, DecayTime: -1})
		live := map[Handle]int{}
		handle := rapid.Custom(func(t *rapid.T) Handle { return Handle(rapid.IntRange(0, sampleCount+poolSize+3).Draw(t, "h")) })
		hit := func(h Handle) {
			if c, ok := live[h]; ok {
				live[h] = min(c+1, 255)
			}
		}
		// An Add or Update of a tracked handle counts as a hit (see
		// Policy.Add); of an untracked one, it starts a new entry.
		write := func(h Handle) {
			if _, ok := live[h]; ok {
				hit(h)
			} else {
				live[h] = lfuInitVal
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				write(h)
				p.Add(h, Entry{})
			},
			"update": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				write(h)
				p.Update(h, Entry{})
			},
			"access": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				for range rapid.IntRange(1, 300).Draw(t, "n") {
					p.Access(h)
					hit(h)
				}
			},
			"remove": func(t *rapid.T) {
				h := handle.Draw(t, "h")
				p.Remove(h)
				delete(live, h)
			},
			"victim": func(t *rapid.T) {
				if len(live) > sampleCount+poolSize {
					return
				}
				h, ok := p.Victim(rapid.Int64().Draw(t, "now"))
				if ok != (len(live) > 0) {
					t.Fatalf("Victim ok = %v with %d live", ok, len(live))
				}
				if !ok {
					return
				}
				c, tracked := live[h]
				if !tracked {
					t.Fatalf("Victim = %d, not tracked", h)
				}
				for x, cx := range live {
					if cx < c {
						t.Fatalf("Victim = %d counted %d, but %d is counted %d (%v)", h, c, x, cx, live)
					}
				}
			},
			"": func(t *rapid.T) {
				if err := p.check(); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}
