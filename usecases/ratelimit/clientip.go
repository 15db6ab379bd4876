package ratelimit

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ProxyHeader names the request header in which trusted reverse proxies
// record the address they received a request from.
type ProxyHeader uint8

const (
	// ProxyHeaderXForwardedFor reads X-Forwarded-For: a comma-separated
	// list of addresses, each proxy appending its peer's (with or without
	// a port; IPv6 bare or in brackets).
	ProxyHeaderXForwardedFor ProxyHeader = iota
	// ProxyHeaderForwarded reads Forwarded (RFC 7239): a comma-separated
	// list of elements, each proxy appending one whose for= parameter is
	// its peer ("192.0.2.60", "[2001:db8::17]:4711", quoted or not).
	ProxyHeaderForwarded
)

func (h ProxyHeader) name() string {
	if h == ProxyHeaderForwarded {
		return "Forwarded"
	}
	return "X-Forwarded-For"
}

// UnknownClient is the key ClientIP.Key returns for a request whose client
// cannot be identified: the peer is not an IP address (a Unix socket), or
// a trusted proxy's header names no address where the walk needs one
// (malformed, "unknown", an obfuscated identifier). Such requests share
// one limit, so sending a malformed header never escapes limiting.
const UnknownClient = "unknown"

// ClientIPConfig configures a ClientIP. The zero value trusts no proxy:
// the client is the connection's peer (Request.RemoteAddr), IPv4 addresses
// are keyed alone and IPv6 addresses by their /64.
type ClientIPConfig struct {
	// TrustedProxies lists the reverse proxies whose forwarding header is
	// believed, as CIDR prefixes ("10.0.0.0/8", "2001:db8::/32") or single
	// addresses ("192.0.2.1"). Empty means none: forwarding headers are
	// ignored, which is the only safe choice for a server clients reach
	// directly. A prefix of length 0 (trusting every address, so every
	// client could choose its own key) and addresses with a zone are
	// rejected.
	TrustedProxies []string
	// Header is the header the trusted proxies maintain; the zero value is
	// ProxyHeaderXForwardedFor. Only this header is read: a proxy that
	// maintains one header passes the other through from the client
	// unchanged.
	Header ProxyHeader
	// IPv4PrefixLen groups IPv4 clients by network: 0 means 32 (each
	// address alone); 1..32.
	IPv4PrefixLen int
	// IPv6PrefixLen groups IPv6 clients by network: 0 means 64, the
	// smallest network an ISP usually assigns, so that one subscriber
	// cannot multiply its limit by rotating addresses; 1..128.
	IPv6PrefixLen int
}

// ClientIP identifies the client of an HTTP request by IP address, for
// keying a rate limit. Its Key method is a KeyFunc.
//
// Algorithm: the hops are the addresses in the configured forwarding
// header, left (first proxy's client) to right (last proxy's client),
// followed by the connection's peer. The client is the rightmost hop that
// is not a trusted proxy:
//
//	client := peer
//	for client is a trusted proxy {
//		hop := the next entry of the header, right to left
//		if there is none { return client }  // the request began at a proxy
//		if hop is not an address { return unknown }
//		client = hop
//	}
//	return client
//
// A client reaching the server directly, or through a proxy that is not
// trusted, is therefore identified by its own connection whatever headers
// it sends; a client behind trusted proxies can prepend entries to the
// header but not change the one its first trusted proxy appended. Ports
// and IPv6 zones are dropped and IPv4-mapped IPv6 addresses are unmapped.
// Empty list elements are skipped (RFC 9110, section 5.6.1).
//
// Cost: Addr scans the header from the right, O(its length) at worst, and
// makes O(hops walked × len(TrustedProxies)) prefix checks; it allocates
// only to unescape a quoted Forwarded value. Key allocates its string, once.
// A ClientIP is immutable and safe for concurrent use; its zero
// value is not usable: create one with NewClientIP.
type ClientIP struct {
	trusted []netip.Prefix
	header  string
	fwd     bool // Forwarded, not X-Forwarded-For
	bits4   int
	bits6   int
}

// NewClientIP returns a ClientIP configured by cfg, or an error wrapping
// ErrInvalidConfig that names the offending field.
func NewClientIP(cfg ClientIPConfig) (*ClientIP, error) {
	c := &ClientIP{header: cfg.Header.name(), fwd: cfg.Header == ProxyHeaderForwarded, bits4: cfg.IPv4PrefixLen, bits6: cfg.IPv6PrefixLen}
	if cfg.Header > ProxyHeaderForwarded {
		return nil, fmt.Errorf("%w: Header = %d", ErrInvalidConfig, cfg.Header)
	}
	if c.bits4 == 0 {
		c.bits4 = 32
	}
	if c.bits6 == 0 {
		c.bits6 = 64
	}
	if c.bits4 < 1 || c.bits4 > 32 {
		return nil, fmt.Errorf("%w: IPv4PrefixLen = %d, want 0..32", ErrInvalidConfig, cfg.IPv4PrefixLen)
	}
	if c.bits6 < 1 || c.bits6 > 128 {
		return nil, fmt.Errorf("%w: IPv6PrefixLen = %d, want 0..128", ErrInvalidConfig, cfg.IPv6PrefixLen)
	}
	for _, s := range cfg.TrustedProxies {
		p, err := parseTrusted(s)
		if err != nil {
			return nil, fmt.Errorf("%w: TrustedProxies entry %q: %v", ErrInvalidConfig, s, err)
		}
		c.trusted = append(c.trusted, p)
	}
	return c, nil
}

// parseTrusted parses a CIDR prefix or a single address, unmapping
// IPv4-mapped IPv6 so that it matches unmapped peers.
func parseTrusted(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, err
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return p, err
		}
		if a.Zone() != "" {
			return p, fmt.Errorf("zones are not supported")
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return p, fmt.Errorf("an IPv4-mapped prefix needs at least 96 bits")
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	if p.Bits() == 0 {
		return p, fmt.Errorf("a /0 prefix trusts every client to name itself")
	}
	return p.Masked(), nil
}

// Key returns the rate-limit key of r's client: its address, or the
// network it belongs to under IPv4PrefixLen and IPv6PrefixLen (for
// example "2001:db8:1:2::/64"), or UnknownClient. ok is always true: no
// request is exempt.
func (c *ClientIP) Key(r *http.Request) (key string, ok bool) {
	a, ok := c.Addr(r)
	if !ok {
		return UnknownClient, true
	}
	bits := c.bits6
	if a.Is4() {
		bits = c.bits4
	}
	var buf [64]byte // an IPv6 prefix is at most 43 bytes
	if bits == a.BitLen() {
		return string(a.AppendTo(buf[:0])), true
	}
	return string(netip.PrefixFrom(a, bits).Masked().AppendTo(buf[:0])), true
}

// Addr returns the address of r's client, or false if it cannot be
// identified (see UnknownClient). The address has no zone and is never
// IPv4-mapped IPv6.
func (c *ClientIP) Addr(r *http.Request) (netip.Addr, bool) {
	client, ok := parseHop(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, false
	}
	if !c.isTrusted(client) {
		return client, true
	}
	lines := r.Header.Values(c.header)
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for line != "" {
			var elem string
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				line, elem = line[:j], line[j+1:]
			} else {
				line, elem = "", line
			}
			elem = strings.TrimSpace(elem)
			if elem == "" {
				continue
			}
			if c.fwd {
				if elem, ok = forwardedFor(elem); !ok {
					return netip.Addr{}, false
				}
			}
			if client, ok = parseHop(elem); !ok {
				return netip.Addr{}, false
			}
			if !c.isTrusted(client) {
				return client, true
			}
		}
	}
	return client, true
}

func (c *ClientIP) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop parses an address as found in RemoteAddr or a forwarding
// header: "192.0.2.1", "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]",
// "[2001:db8::1]:80", each IPv6 form optionally with a zone. It picks the
// form from the punctuation first, so that the common forms parse without
// a failed attempt (whose error would allocate).
func parseHop(s string) (netip.Addr, bool) {
	var a netip.Addr
	var err error
	switch {
	case len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']':
		if a, err = netip.ParseAddr(s[1 : len(s)-1]); err == nil && !a.Is6() {
			return netip.Addr{}, false // "[192.0.2.1]" is not a valid form
		}
	case strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1:
		var ap netip.AddrPort
		ap, err = netip.ParseAddrPort(s)
		a = ap.Addr()
	default:
		a, err = netip.ParseAddr(s)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// forwardedFor returns the value of the for= parameter of one Forwarded
// element ("for=192.0.2.60;proto=http;by=203.0.113.43"), unquoted. The
// parameter name is case-insensitive (RFC 7239, section 4). An element
// without for=, with it twice, or with a broken quoted-string is not ok.
func forwardedFor(elem string) (string, bool) {
	var val string
	found := false
	for elem != "" {
		var pair string
		if j := strings.IndexByte(elem, ';'); j >= 0 {
			pair, elem = elem[:j], elem[j+1:]
		} else {
			pair, elem = elem, ""
		}
		name, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			return "", false
		}
		if !strings.EqualFold(name, "for") {
			continue
		}
		if found {
			return "", false
		}
		if v, ok = unquote(v); !ok {
			return "", false
		}
		val, found = v, true
	}
	return val, found
}

// unquote returns a token as is and a quoted-string's content with its
// quoted-pairs resolved (RFC 9110, section 5.6.4).
func unquote(v string) (string, bool) {
	if v == "" || v[0] != '"' {
		return v, !strings.ContainsAny(v, "\" \t")
	}
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", false
	}
	v = v[1 : len(v)-1]
	if !strings.ContainsAny(v, "\\\"") {
		return v, true
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			return "", false
		case '\\':
			i++
			if i == len(v) {
				return "", false
			}
		}
		b.WriteByte(v[i])
	}
	return b.String(), true
}
