package bench

import (
	"math/rand"
	"strconv"
	"strings"
	"time"
)

// Shapes of the workloads (see README.md).
const (
	KeyLen   = 16
	ValueLen = 64
	// Seed seeds every generator: runs are deterministic.
	Seed = 20261202
)

// Key returns the i-th key: "k" and i in 15 zero-padded digits (16 bytes).
func Key(prefix byte, i int) string {
	var b [KeyLen]byte
	b[0] = prefix
	s := strconv.AppendInt(b[:1], int64(i), 10)
	n := len(s) - 1
	copy(b[KeyLen-n:], s[1:])
	for j := 1; j < KeyLen-n; j++ {
		b[j] = '0'
	}
	return string(b[:])
}

// Keys returns n pre-generated keys with the given prefix byte.
func Keys(prefix byte, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = Key(prefix, i)
	}
	return ks
}

// Value returns a deterministic value of ValueLen bytes.
func Value(i int) []byte {
	v := make([]byte, ValueLen)
	for j := range v {
		v[j] = byte('a' + (i+j)%26)
	}
	return v
}

// ZipfTrace returns n indices in [0, keys) drawn from a Zipf distribution
// with exponent s (most popular index 0).
func ZipfTrace(seed int64, s float64, keys, n int) []int32 {
	r := rand.New(rand.NewSource(seed))
	z := rand.NewZipf(r, s, 1, uint64(keys-1))
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(z.Uint64())
	}
	// Zipf ranks popularity by index; scatter the ranks over the key space
	// so the hot keys are not also the lexically first ones.
	perm := r.Perm(keys)
	for i := range t {
		t[i] = int32(perm[t[i]])
	}
	return t
}

// EntryTTL is the per-entry TTL of key i in the TTL throughput workloads:
// between 1 h and 2 h, so nothing expires during a run but every entry is in
// the expiry index and every read checks the clock.
func EntryTTL(i int) time.Duration {
	return time.Hour + time.Duration(i%3600)*time.Second
}

// Fill writes keys[i] = values[i] for every i, with EntryTTL(i) if ttl.
func Fill(c Cache, keys []string, values [][]byte, ttl bool) {
	for i, k := range keys {
		if ttl {
			c.SetTTL(k, values[i], EntryTTL(i))
		} else {
			c.Set(k, values[i])
		}
		if i%4096 == 4095 {
			c.Flush() // ristretto drops sets when its buffer is full
		}
	}
	c.Flush()
}

// Warm reads n keys of d's trace from its start, on one goroutine: what a
// pre-filled cache serves before a timed run, so that the run measures the
// cache as it serves a long stream of reads, not the transition to it
// (tide's policy learns every read of a shard until it has made a pass of
// reads as long as the shard's entry count, then one in 16: see
// engine/readlog.go; a run that starts at the fill measures part of that
// pass).
func Warm(c Cache, d *Dataset, n int) {
	buf := make([]byte, 0, 256)
	for i := range n {
		buf, _ = c.Get(buf[:0], d.Keys[d.Trace[i&(TraceLen-1)]])
	}
}

// Dataset is the shared input of the throughput workloads.
//
// A cache is given its keys and values as an application gives them: each
// entry's value in memory of its own (Values), and keys (Stored) that are
// not the strings later reads look up with (Keys), as a request builds its
// key anew. Reads use Keys, writes Stored, Fill Values (a mix's write
// hands over a fresh copy of a value: see RunMix). Until the
// eleventh pass of issue 16 every entry shared one value slice, writes
// handed it over itself, and reads looked up with the very strings the
// cache was given: a cache that keeps the caller's string then compared
// keys by pointer (Go's string equality stops at identical pointers) and
// never read its stored key's bytes, and one that keeps the caller's
// slice kept one value for a million entries (bench/README.md, eleventh
// pass, has what that changed).
type Dataset struct {
	Keys    []string // present keys, as reads look them up
	Stored  []string // Keys[i]'s bytes in memory of their own: the key a cache is given
	Missing []string // keys never written
	Trace   []int32  // Zipf s=1.01 indices into Keys (and Missing)
	Ops     []uint8  // uniform in [0,100): an op is a write if Ops[i] < write%
	Values  [][]byte // Values[i] = Value(i), key i's value, ValueLen bytes of its own

	// shared: the dataset of Shared, whose writes hand the cache
	// Values[0] itself rather than a fresh copy (see RunMix).
	shared bool
}

// Shared returns d as the throughput workloads used it until the eleventh
// pass of issue 16: every entry's value the one slice Values[0], the
// stored keys the strings reads look up with (Stored is Keys), and writes
// that hand the cache that slice itself, not a fresh copy (see RunMix). cmd/speed
// -shared runs it, to compare with the runs made before.
func (d *Dataset) Shared() *Dataset {
	s := *d
	s.shared = true
	s.Stored = d.Keys
	s.Values = make([][]byte, len(d.Values))
	for i := range s.Values {
		s.Values[i] = d.Values[0]
	}
	return &s
}

// TraceLen is the length of the pre-generated trace (a power of two).
const TraceLen = 1 << 22

var ds *Dataset

// Throughput returns the dataset of the throughput workloads for n keys
// (generated once per process).
func Throughput(n int) *Dataset {
	if ds != nil && len(ds.Keys) == n {
		return ds
	}
	r := rand.New(rand.NewSource(Seed + 1))
	d := &Dataset{
		Keys:    Keys('k', n),
		Stored:  make([]string, n),
		Missing: Keys('m', n),
		Trace:   ZipfTrace(Seed, 1.01, n, TraceLen),
		Ops:     make([]uint8, TraceLen),
		Values:  make([][]byte, n),
	}
	for i, k := range d.Keys {
		d.Stored[i] = strings.Clone(k)
		d.Values[i] = Value(i)
	}
	for i := range d.Ops {
		d.Ops[i] = uint8(r.Intn(100))
	}
	ds = d
	return d
}
