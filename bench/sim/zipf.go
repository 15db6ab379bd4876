package sim

import (
	"math"
	mrand "math/rand"
	"math/rand/v2"
	"sort"
)

// Zipf returns requests keys drawn from a Zipf distribution with exponent s
// over n keys (rank r has weight 1/r^s; s may be below 1, which
// math/rand's Zipf does not allow), by inverse CDF with a fixed seed.
// Ranks are scrambled into keys so that popularity is not tied to key order.
func Zipf(s float64, n, requests int, seed uint64) []uint64 {
	cdf := make([]float64, n)
	sum := 0.0
	for i := range n {
		sum += 1 / math.Pow(float64(i+1), s)
		cdf[i] = sum
	}
	r := rand.New(rand.NewPCG(seed, 0x7a697066))
	keys := make([]uint64, requests)
	for i := range keys {
		u := r.Float64() * sum
		rank := sort.SearchFloat64s(cdf, u)
		keys[i] = mix(uint64(rank) + 1)
	}
	return keys
}

// OtterZipf reproduces the synthetic workload that otter, theine and
// go-cache-benchmark-plus publish: math/rand's NewZipf(r, 1.0001, 10,
// 50_000_000), with a fixed seed instead of the time.
func OtterZipf(requests int, seed int64) []uint64 {
	z := mrand.NewZipf(mrand.New(mrand.NewSource(seed)), 1.0001, 10, 50_000_000)
	keys := make([]uint64, requests)
	for i := range keys {
		keys[i] = z.Uint64()
	}
	return keys
}

// mix is splitmix64's finalizer; the simulator uses it as the key hash.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
