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

// growLen is the new length of a per-handle array that must hold handle h:
// 1.25× the current length (the engine's slot array grows about as fast),
// so that the arrays' slack stays near a quarter instead of up to double.
func growLen(h Handle, cur int) int { return max(int(h)+1, cur+cur/4, 16) }
