package store

import (
	"fmt"
	"strings"
)

// ValidatePrefix reports a key prefix a backend must refuse as its scope
// (see "Scopes"), as an error wrapping ErrInvalidArgument. A prefix is ""
// (no scope) or a non-empty name followed by ':', where the name contains
// no ':' and no '{' and is not "tide" ("billing:", "tenant-42:"). Nested
// prefixes ("a:b:") are refused: the first ':' of a scoped key must end
// its prefix. Backends' constructors start with it.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	name, ok := strings.CutSuffix(prefix, ":")
	switch {
	case !ok || name == "":
		return fmt.Errorf("%w: key prefix %q is not a name followed by ':' (such as \"billing:\")", ErrInvalidArgument, prefix)
	case strings.Contains(name, ":"):
		return fmt.Errorf("%w: key prefix %q has a ':' before its end (nested scopes are refused: scope %q could reach its keys; use one name, such as %q)",
			ErrInvalidArgument, prefix, prefix[:strings.IndexByte(prefix, ':')+1], strings.ReplaceAll(name, ":", "-")+":")
	case strings.Contains(name, "{"):
		return fmt.Errorf("%w: key prefix %q contains '{' (it would change every key's Redis Cluster hash slot)", ErrInvalidArgument, prefix)
	case name == "tide":
		return fmt.Errorf("%w: key prefix %q is reserved (the adapters' default keys begin with it)", ErrInvalidArgument, prefix)
	}
	return nil
}

// ReservedPrefix begins the keys a backend keeps for its own bookkeeping
// (redisstore's version counters), within its scope: no caller's key
// begins with it, nor with a scope's prefix followed by it (Reserved),
// since a backend without a scope addresses every scope's keys, and its
// key "s:" + ReservedPrefix + … is one of scope "s:"'s own. On every
// backend, Set and every decision refuse such a key with
// ErrInvalidArgument, changing nothing, and Get, Delete and
// CompareAndDelete report it missing, so that no caller can read, replace
// or delete a backend's own keys, any scope's included, and a call has the
// same answer on every backend. The adapters' keys never begin with it.
const ReservedPrefix = "tide:ver:"

// Reserved reports whether the caller's key k is reserved for backends'
// own keys: k begins with ReservedPrefix, or with a scope's prefix (a
// valid non-empty one, ValidatePrefix) followed by ReservedPrefix. The
// rule does not depend on the backend's own scope, so that a key has one
// answer on every backend.
func Reserved(k string) bool {
	if strings.HasPrefix(k, ReservedPrefix) {
		return true
	}
	i := strings.IndexByte(k, ':')
	return i > 0 && strings.HasPrefix(k[i+1:], ReservedPrefix) && ValidatePrefix(k[:i+1]) == nil
}
