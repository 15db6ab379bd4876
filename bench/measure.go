package bench

import (
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"time"
)

// MemoryResult is one peer's memory overhead measurement.
type MemoryResult struct {
	Peer       string    `json:"peer"`
	Entries    int       `json:"entries"`
	Resident   int       `json:"resident"` // keys found by Get after the fill
	HeapBytes  int64     `json:"heap_bytes"`
	PerEntry   float64   `json:"per_entry"` // heap bytes per resident entry
	Overhead   float64   `json:"overhead"`  // PerEntry - key - value
	FillSecs   float64   `json:"fill_secs"` // time to insert all entries
	GCMedianMs float64   `json:"gc_median_ms,omitempty"`
	GCMs       []float64 `json:"gc_ms,omitempty"`
}

// fill inserts n fresh entries (Fresh keys and values) into c.
func fill(c Cache, n int, ttl func(i int) time.Duration) {
	tmpl := Value(1)
	for i := 0; i < n; i++ {
		k, v := Fresh('k', i, tmpl)
		if ttl != nil {
			c.SetTTL(k, v, ttl(i))
		} else {
			c.Set(k, v)
		}
		if i%4096 == 4095 {
			c.Flush()
		}
	}
	c.Flush()
}

func countResident(c Cache, n int) int {
	found := 0
	buf := make([]byte, 0, 256)
	for i := 0; i < n; i++ {
		var ok bool
		buf, ok = c.Get(buf[:0], Key('k', i))
		if ok {
			found++
		}
	}
	return found
}

// MeasureMemory fills a fresh cache with n entries of KeyLen-byte keys and
// ValueLen-byte values and returns the live heap it holds (after
// runtime.GC) per entry, beyond key + value. If gcReps > 0 it then times
// gcReps forced collections.
func MeasureMemory(p Peer, n, gcReps int) MemoryResult {
	base := HeapAlloc()
	c := p.New(Options{Entries: n, KeyLen: KeyLen, ValueLen: ValueLen})
	start := time.Now()
	fill(c, n, nil)
	r := MemoryResult{Peer: p.Name, Entries: n, FillSecs: time.Since(start).Seconds()}
	r.Resident = countResident(c, n)
	after := HeapAlloc()
	r.HeapBytes = int64(after) - int64(base)
	r.PerEntry = float64(r.HeapBytes) / float64(max(r.Resident, 1))
	r.Overhead = r.PerEntry - KeyLen - ValueLen
	for i := 0; i < gcReps; i++ {
		t := time.Now()
		runtime.GC()
		r.GCMs = append(r.GCMs, float64(time.Since(t).Microseconds())/1000)
	}
	if gcReps > 0 {
		r.GCMedianMs = Median(slices.Clone(r.GCMs))
	}
	runtime.KeepAlive(c)
	c.Close()
	return r
}

// ExpirySample is one 250 ms sample of the reclamation workload.
type ExpirySample struct {
	T           float64 `json:"t"`            // seconds since the last deadline (negative before)
	HeapMB      float64 `json:"heap_mb"`      // live heap above the baseline, after runtime.GC
	Resident    int     `json:"resident"`     // entries the peer holds (-1: cannot tell)
	ExpiredLeft int     `json:"expired_left"` // resident entries past their deadline (-1: cannot tell)
}

// ExpiryResult is one peer's expiry reclamation measurement.
type ExpiryResult struct {
	Peer    string         `json:"peer"`
	Entries int            `json:"entries"`
	TTL     string         `json:"ttl"` // what the peer was asked to do
	PeakMB  float64        `json:"peak_mb"`
	Samples []ExpirySample `json:"samples"`
	// HeapBackAfter is the time after the last deadline at which the heap
	// above baseline first fell to 10% of its peak (-1: never in the run).
	HeapBackAfter float64 `json:"heap_back_after"`
	// ClearAfter is the time after the last deadline at which no expired
	// entry was resident any more (-1: never, or cannot tell).
	ClearAfter float64 `json:"clear_after"`
}

// MeasureExpiry inserts n entries with TTLs uniform in [1s, 2s] (global-TTL
// peers get 1.5 s for all), never reads them, and samples the heap and the
// expired-but-resident count every interval until the heap is back near
// the baseline or until tail after the last deadline.
//
// scale multiplies every TTL (1 for the real workload; the CI smoke uses
// less).
func MeasureExpiry(p Peer, n int, interval, tail time.Duration, scale float64) ExpiryResult {
	deadlines := make([]int64, n)
	sorted := make([]int64, n)
	samples := make([]ExpirySample, 0, 256)
	base := HeapAlloc()
	r := ExpiryResult{Peer: p.Name, Entries: n, TTL: "uniform 1-2 s per entry", HeapBackAfter: -1, ClearAfter: -1}
	sec := time.Duration(float64(time.Second) * scale)
	o := Options{Entries: n, KeyLen: KeyLen, ValueLen: ValueLen, GlobalTTL: sec * 3 / 2}
	switch p.Caps.TTL {
	case GlobalTTL:
		r.TTL = "1.5 s for all (global TTL only)"
	case NoTTL:
		r.TTL = "none (no TTL support)"
	}
	c := p.New(o)
	rng := rand.New(rand.NewSource(Seed + 2))
	tmpl := Value(2)
	for i := 0; i < n; i++ {
		ttl := sec + time.Duration(rng.Int63n(int64(sec)))
		if p.Caps.TTL == GlobalTTL {
			ttl = o.GlobalTTL
		}
		k, v := Fresh('k', i, tmpl)
		c.SetTTL(k, v, ttl)
		deadlines[i] = time.Now().Add(ttl).UnixNano()
		if i%4096 == 4095 {
			c.Flush()
		}
	}
	c.Flush()
	if p.Caps.TTL == NoTTL {
		for i := range deadlines {
			deadlines[i] = 1<<63 - 1
		}
	}
	copy(sorted, deadlines)
	slices.Sort(sorted)
	r.Samples = samples
	last := sorted[len(sorted)-1]
	if p.Caps.TTL == NoTTL {
		last = time.Now().Add(2 * sec).UnixNano()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		now := time.Now().UnixNano()
		heap := float64(int64(HeapAlloc())-int64(base)) / (1 << 20)
		s := ExpirySample{T: float64(now-last) / 1e9, HeapMB: heap, Resident: c.Len(), ExpiredLeft: -1}
		due, _ := slices.BinarySearch(sorted, now+1)
		if s.Resident >= 0 {
			s.ExpiredLeft = max(0, s.Resident-(n-due))
		}
		r.PeakMB = max(r.PeakMB, heap)
		r.Samples = append(r.Samples, s)
		if now >= last {
			if r.HeapBackAfter < 0 && heap <= 0.1*r.PeakMB {
				r.HeapBackAfter = s.T
			}
			if r.ClearAfter < 0 && s.ExpiredLeft == 0 {
				r.ClearAfter = s.T
			}
			if (r.HeapBackAfter >= 0 && (r.ClearAfter >= 0 || s.Resident < 0)) || now-last > int64(tail) {
				break
			}
		}
		<-t.C
	}
	runtime.KeepAlive(c)
	c.Close()
	return r
}

// ExpireCostResult is the cost of removing due entries with and without a
// large population of not-yet-due entries.
type ExpireCostResult struct {
	Peer     string    `json:"peer"`
	Due      int       `json:"due"`
	Resident int       `json:"resident"` // not-yet-due entries present
	Ms       []float64 `json:"ms"`
	MedianMs float64   `json:"median_ms"`
	// CPUMs is the process's CPU time during each pass (GC workers
	// included): on a shared machine, wall time also counts the time other
	// processes held the CPU.
	CPUMs       []float64 `json:"cpu_ms,omitempty"`
	MedianCPUMs float64   `json:"median_cpu_ms,omitempty"`
	Method      string    `json:"method"`
}

// Expirer runs a peer's explicit expiry pass until no due entry is left, or
// reports that the peer has none.
type Expirer func(c Cache) (method string, ok bool)

// MeasureExpireCostPair measures the growth the project's target is about:
// the time of the peer's explicit expiry pass removing due entries of a
// fresh cache alone (no other entry resident) and beside resident entries
// with a 1 h TTL, reps times each (a fresh cache each), alternating between
// the two cases so that a change in the machine's load during the run
// affects both alike. The growth is loaded.MedianMs ÷ alone.MedianMs.
//
// settle is how long to wait after the due keys' TTL (otter's timer wheel
// processes its finest, ~1.07 s bucket only once all of it is due).
func MeasureExpireCostPair(p Peer, due, resident, reps int, settle time.Duration) (alone, loaded ExpireCostResult, err error) {
	alone = ExpireCostResult{Peer: p.Name, Due: due}
	loaded = ExpireCostResult{Peer: p.Name, Due: due, Resident: resident}
	if err := probeExpireCost(p); err != nil {
		return alone, loaded, err
	}
	for rep := 0; rep < reps; rep++ {
		for _, r := range []*ExpireCostResult{&alone, &loaded} {
			if err := expireCostRep(p, r, settle); err != nil {
				return alone, loaded, err
			}
		}
	}
	alone.finish()
	loaded.finish()
	return alone, loaded, nil
}

func probeExpireCost(p Peer) error {
	probe := newForExpireCost(p, 16)
	_, ok := ExpireNow(probe)
	probe.Close()
	if !ok {
		return fmt.Errorf("%s has no explicit expiry pass", p.Name)
	}
	return nil
}

func (r *ExpireCostResult) finish() {
	r.MedianMs = Median(slices.Clone(r.Ms))
	if len(r.CPUMs) > 0 {
		r.MedianCPUMs = Median(slices.Clone(r.CPUMs))
	}
}

// expireCostRep is one repetition of MeasureExpireCostPair: a fresh cache with
// r.Resident entries due in 1 h (+1 ms each) and then r.Due entries due in
// 500 ms (+1 µs each), a wait until all of those are due (and settle more),
// runtime.GC, and the timed pass, appended to r.
func expireCostRep(p Peer, r *ExpireCostResult, settle time.Duration) error {
	c := newForExpireCost(p, r.Due+r.Resident)
	err := expireCostPass(p, c, r, settle)
	c.Close()
	runtime.GC()
	return err
}

func expireCostPass(p Peer, c Cache, r *ExpireCostResult, settle time.Duration) error {
	due, resident := r.Due, r.Resident
	tmpl := Value(3)
	for i := 0; i < resident; i++ {
		k, v := Fresh('r', i, tmpl)
		c.SetTTL(k, v, time.Hour+time.Duration(i)*time.Millisecond)
	}
	c.Flush()
	const ttl = 500 * time.Millisecond
	start := time.Now()
	for i := 0; i < due; i++ {
		k, v := Fresh('d', i, tmpl)
		c.SetTTL(k, v, ttl+time.Duration(i)*time.Microsecond)
	}
	c.Flush()
	if time.Since(start) > ttl {
		return fmt.Errorf("%s: inserting %d due keys took %v, longer than their TTL", p.Name, due, time.Since(start))
	}
	time.Sleep(time.Until(start.Add(ttl + time.Duration(due)*time.Microsecond + settle)))
	runtime.GC()
	before := c.Len()
	if before >= 0 && before != due+resident {
		return fmt.Errorf("%s: %d entries resident before the pass, want %d (expired in the background first)", p.Name, before, due+resident)
	}
	cpu := cpuNanos()
	t := time.Now()
	method, ok := ExpireNow(c)
	el := time.Since(t)
	cpu = cpuNanos() - cpu
	if !ok {
		return fmt.Errorf("%s has no explicit expiry pass", p.Name)
	}
	r.Method = method
	if after := c.Len(); after >= 0 && before-after != due {
		return fmt.Errorf("%s: expiry removed %d entries, want %d", p.Name, before-after, due)
	}
	r.Ms = append(r.Ms, float64(el.Microseconds())/1000)
	if cpu > 0 {
		r.CPUMs = append(r.CPUMs, float64(cpu/1000)/1000)
	}
	return nil
}
