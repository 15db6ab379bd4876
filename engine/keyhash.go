package engine

import (
	"math/rand/v2"
	"unsafe"
)

// keySeed is an engine's secret key-hash seed, and keyHash its hash: the
// Go runtime's own hash of memory (runtime.memhash: AES rounds where the
// CPU has them, a keyed wyhash otherwise), keyed by a random 64-bit seed
// per engine and the process's random hash key, the way Go's maps hash a
// string and the function hash/maphash is built on. Keys picked offline
// therefore cannot be made to collide (no hash flooding:
// TestCraftedKeysCostLikeRandomKeys). maphash.String reaches the same call
// through two wrappers, which cost a View 34 of its 526 instructions
// (cachegrind, unbounded, in cache); its hash is not bit-identical (it
// returns the seed for an empty string and chains 128-byte blocks), which
// nothing relies on: the engine hashes every key with keyHash, and no hash
// is stored outside the process. Where uintptr has 32 bits, memhash's hash
// does too, and keyHash joins two of them, under the seed's two halves (as
// maphash does).
//
// memhash is reached with go:linkname; the runtime keeps that name and
// signature for such callers (go.dev/issue/67401).
type keySeed uint64

// newKeySeed returns a random seed. math/rand/v2's global functions read
// the runtime's ChaCha8 generator, seeded by the operating system, the
// source maphash.MakeSeed uses too.
func newKeySeed() keySeed { return keySeed(rand.Uint64()) }

// keyHash returns the hash of key under seed k.
func (k keySeed) keyHash(key string) uint64 {
	p, n := unsafe.Pointer(unsafe.StringData(key)), uintptr(len(key))
	if unsafe.Sizeof(uintptr(0)) == 8 {
		return uint64(memhash(p, uintptr(k), n))
	}
	lo := memhash(p, uintptr(uint32(k)), n)
	hi := memhash(p, uintptr(uint32(k>>32)), n)
	return uint64(hi)<<32 | uint64(uint32(lo))
}

//go:linkname memhash runtime.memhash
//go:noescape
func memhash(p unsafe.Pointer, h, s uintptr) uintptr
