package engine

import (
	"hash/maphash"
	"math/rand/v2"
	"unsafe"
)

// keySeed is an engine's secret key-hash seed, and keyHash its hash: the
// Go runtime's own string hash (runtime.memhash: AES rounds where the CPU
// has them, a keyed wyhash otherwise), keyed by a random 64-bit seed per
// engine and the process's random hash key, as the runtime keys its maps
// and hash/maphash its Hash. Keys picked offline therefore cannot be made
// to collide (no hash flooding: TestCraftedKeysCostLikeRandomKeys). For a
// string, maphash.String computes exactly this call, behind two wrappers
// that cost a View 34 of its 526 instructions (cachegrind, unbounded, in
// cache). On a platform whose uintptr has 32 bits, memhash's hash would
// have 32 bits too, and keyHash is maphash's.
//
// memhash is reached with go:linkname; the runtime keeps that name and
// signature for such callers (go.dev/issue/67401).
type keySeed struct {
	s  uint64       // memhash's seed (64-bit platforms)
	ms maphash.Seed // maphash's (other platforms)
}

// newKeySeed returns a random seed. math/rand/v2's global functions read
// the runtime's ChaCha8 generator, seeded by the operating system, the
// source maphash.MakeSeed uses too.
func newKeySeed() keySeed { return keySeed{s: rand.Uint64(), ms: maphash.MakeSeed()} }

// keyHash returns the hash of key under seed k.
func (k keySeed) keyHash(key string) uint64 {
	if unsafe.Sizeof(uintptr(0)) == 8 {
		return uint64(memhash(unsafe.Pointer(unsafe.StringData(key)), uintptr(k.s), uintptr(len(key))))
	}
	return maphash.String(k.ms, key)
}

//go:linkname memhash runtime.memhash
//go:noescape
func memhash(p unsafe.Pointer, h, s uintptr) uintptr
