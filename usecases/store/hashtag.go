package store

import "strings"

// HashTag returns name wrapped in braces, for the part of a key that scopes
// one decision (see "Keys and ownership"): "{" + enc + "}", where enc is
// name with every '%', '{' and '}' byte percent-encoded as "%25", "%7B" and
// "%7D", and the empty name is written "%".
//
// Redis Cluster hashes only the bytes between a key's first '{' and the
// next '}' (if there are any): with the name written raw, a name such as
// "}beta" would give the empty tag "{}" and the keys of one decision
// ("{}beta}", "{}beta}:audit") would hash to different slots. enc never
// contains a brace and is never empty, so every key that starts with
// HashTag(name) (after a brace-free prefix) hashes to the slot of enc; and
// the encoding is injective, so different names never share a key.
// Names without '%', '{' or '}' are written unchanged.
func HashTag(name string) string {
	if name == "" {
		return "{%}"
	}
	if !strings.ContainsAny(name, "%{}") {
		return "{" + name + "}"
	}
	var sb strings.Builder
	sb.Grow(len(name) + 8)
	sb.WriteByte('{')
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '%':
			sb.WriteString("%25")
		case '{':
			sb.WriteString("%7B")
		case '}':
			sb.WriteString("%7D")
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('}')
	return sb.String()
}

// KeyTag returns key's hash tag, the bytes between its first '{' and the
// next '}', and whether it has a non-empty one: what Redis Cluster hashes
// to pick the key's slot (a key without one is hashed whole). The two keys
// of a Lease or a FlagWrite must have the same tag (see "Keys and
// ownership"); HashTag(name) begins a key whose tag is never empty.
func KeyTag(key string) (string, bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return key[i+1 : i+1+j], true
}

// sameTag reports whether keys a and b have the same non-empty hash tag.
func sameTag(a, b string) bool {
	ta, ok := KeyTag(a)
	tb, okb := KeyTag(b)
	return ok && okb && ta == tb
}
