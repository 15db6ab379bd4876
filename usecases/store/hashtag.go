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
