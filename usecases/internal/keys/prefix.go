package keys

import (
	"fmt"
	"strings"

	"github.com/tidekv/tide/usecases/store"
)

// MaxPrefix is the longest Config.Prefix an adapter accepts.
const MaxPrefix = 128

// The adapters' default prefixes, one key space each; each adapter's
// Config.Prefix "" means its own.
const (
	SessionPrefix     = "tide:sess:"
	FlagPrefix        = "tide:flag:"
	RateLimitPrefix   = "tide:rl:"
	IdempotencyPrefix = "tide:idem:"
	LeasePrefix       = "tide:lease:"
	CachePrefix       = "tide:cache:"
)

// Defaults are the adapters' default prefixes.
var Defaults = []string{SessionPrefix, FlagPrefix, RateLimitPrefix, IdempotencyPrefix, LeasePrefix, CachePrefix}

// Reserved are key spaces no adapter may write: every backend refuses keys
// beginning with store.ReservedPrefix (a Redis backend's version counters).
var Reserved = []string{store.ReservedPrefix}

// CheckPrefix returns why prefix is not a valid Config.Prefix for the
// adapter whose default prefix is own, or nil. The rule, shared by every
// adapter:
//
//   - 1 to MaxPrefix bytes (an adapter maps "" to its default before
//     checking), so that a prefix never by itself pushes every key past a
//     store's key limit;
//   - printable ASCII without space (0x21 to 0x7E), so that no control
//     byte, newline or invalid UTF-8 reaches a key, a log line or a
//     redis-cli session;
//   - no '{': Redis Cluster hashes the bytes between a key's first '{' and
//     the next '}', and the adapters put that pair where it must be (the
//     name of a lease, the caller's key of a limiter); a '{' in the prefix
//     would take the hash tag away from it. A '}' alone is harmless (a tag
//     starts at the first '{') and allowed;
//   - no overlap with another adapter's default key space or a reserved
//     one: prefix is neither a prefix of one of Defaults (other than own)
//     or Reserved, nor begins with one. Keys of two prefixes neither of
//     which is a prefix of the other never meet; "tide:" would put an
//     adapter's keys among every other adapter's, where a caller-chosen
//     key can equal another adapter's key. The same holds between a
//     reserved key space and the part of prefix after a store scope's
//     prefix ("tide:ver:" in "a:tide:ver:"): on a backend without a
//     scope, those keys are scope "a:"'s own (store.Reserved), which
//     every backend refuses.
//
// Two adapters configured by hand on one backend must likewise get
// prefixes neither of which is a prefix of the other; that is the
// caller's part, which no constructor can check.
func CheckPrefix(prefix, own string) error {
	if len(prefix) == 0 || len(prefix) > MaxPrefix {
		return fmt.Errorf("prefix is %d bytes, want 1 to %d", len(prefix), MaxPrefix)
	}
	for i := range len(prefix) {
		if c := prefix[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("prefix %q has byte %#02x at %d, want printable ASCII without space", prefix, c, i)
		}
	}
	if strings.Contains(prefix, "{") {
		return fmt.Errorf("prefix %q contains '{' (it would change the keys' Redis Cluster hash tag)", prefix)
	}
	if i := strings.IndexByte(prefix, ':'); i > 0 && i+1 < len(prefix) && store.ValidatePrefix(prefix[:i+1]) == nil {
		rest := prefix[i+1:]
		for _, d := range Reserved {
			if strings.HasPrefix(rest, d) || strings.HasPrefix(d, rest) {
				return fmt.Errorf("prefix %q overlaps the key space %q of scope %q (neither may be a prefix of the other)", prefix, d, prefix[:i+1])
			}
		}
	}
	for _, set := range [][]string{Defaults, Reserved} {
		for _, d := range set {
			if d == own {
				continue
			}
			if strings.HasPrefix(prefix, d) || strings.HasPrefix(d, prefix) {
				return fmt.Errorf("prefix %q overlaps the key space %q (neither may be a prefix of the other)", prefix, d)
			}
		}
	}
	return nil
}
