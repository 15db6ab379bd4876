// Package keys builds the store keys of the use-case adapters: instance
// names, and caller keys that cannot alias each other whatever their length.
package keys

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxRaw is the longest caller key used verbatim; longer ones are hashed,
// so that an oversized key (from a header an attacker controls) is served
// like any other instead of failing in the store.
const MaxRaw = 256

// Caller encodes a caller-chosen key for use inside a store key:
//
//	"k:" + key                      if len(key) ≤ MaxRaw
//	"h:" + hex(SHA-256(key))        otherwise
//
// The two forms start differently, so a long key never encodes to the same
// string as a short one (which a bare hash could: "sha256:…" is a legal
// short key).
func Caller(key string) string {
	if len(key) > MaxRaw {
		sum := sha256.Sum256([]byte(key))
		return "h:" + hex.EncodeToString(sum[:])
	}
	return "k:" + key
}

// ValidName reports whether name is a valid instance name: 1 to 64 bytes
// of [A-Za-z0-9._-] (no ':' or braces, so that a name never reaches into
// the rest of a key's syntax).
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
