package evict

import (
	"fmt"
	"math/bits"
)

func errorf(format string, args ...any) error {
	return fmt.Errorf("tide: evict: "+format, args...)
}

func mul64(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }

// mix64 is a strong 64-bit finalizer (from splitmix64), used to spread
// hashes before indexing sketches.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
