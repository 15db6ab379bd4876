package evict

import (
	"fmt"
	"strings"
)

// Specs lists every built-in policy, in the order Redis documents them,
// followed by tide's additions.
var Specs = []Spec{
	NoEviction,
	AllKeysLRU, AllKeysLFU, AllKeysRandom,
	VolatileLRU, VolatileLFU, VolatileRandom, VolatileTTL,
	TinyLFU, VolatileTinyLFU, S3FIFO,
}

// Parse returns the built-in Spec with the given name, as Redis spells
// maxmemory-policy values ("allkeys-lru", "volatile-ttl", ...) plus tide's
// "tinylfu", "volatile-tinylfu" and "s3fifo". Case and surrounding space are ignored.
// The empty name is NoEviction. An unknown name yields an error wrapping
// ErrUnknownPolicy.
func Parse(name string) (Spec, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return NoEviction, nil
	}
	switch n {
	case "w-tinylfu", "wtinylfu", "allkeys-tinylfu":
		n = "tinylfu"
	case "s3-fifo", "allkeys-s3fifo":
		n = "s3fifo"
	}
	for _, s := range Specs {
		if s.Name == n {
			return s, nil
		}
	}
	return Spec{}, fmt.Errorf("%w: %q", ErrUnknownPolicy, name)
}
