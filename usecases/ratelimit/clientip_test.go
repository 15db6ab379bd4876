package ratelimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tidekv/tide/usecases/ratelimit"
)

var _ ratelimit.KeyFunc = (*ratelimit.ClientIP)(nil).Key

func newClientIP(t testing.TB, cfg ratelimit.ClientIPConfig) *ratelimit.ClientIP {
	t.Helper()
	c, err := ratelimit.NewClientIP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func request(remote string, header string, values ...string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	for _, v := range values {
		r.Header.Add(header, v)
	}
	return r
}

func TestClientIPKey(t *testing.T) {
	trusted := []string{"10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.1"}
	xff := ratelimit.ClientIPConfig{TrustedProxies: trusted}
	fwd := ratelimit.ClientIPConfig{TrustedProxies: trusted, Header: ratelimit.ProxyHeaderForwarded}
	const XFF, FWD = "X-Forwarded-For", "Forwarded"
	tests := []struct {
		name   string
		cfg    ratelimit.ClientIPConfig
		remote string
		header string
		values []string
		want   string
	}{
		// No trusted proxy: the peer, whatever the headers say.
		{"direct IPv4", ratelimit.ClientIPConfig{}, "203.0.113.7:51234", "", nil, "203.0.113.7"},
		{"spoofed XFF, no proxies configured", ratelimit.ClientIPConfig{}, "203.0.113.7:1", XFF, []string{"198.51.100.1"}, "203.0.113.7"},
		{"spoofed XFF from an untrusted peer", xff, "203.0.113.7:1", XFF, []string{"198.51.100.1"}, "203.0.113.7"},
		{"spoofed trusted address in XFF from an untrusted peer", xff, "203.0.113.7:1", XFF, []string{"10.0.0.1"}, "203.0.113.7"},
		{"spoofed Forwarded from an untrusted peer", fwd, "203.0.113.7:1", FWD, []string{"for=198.51.100.1"}, "203.0.113.7"},
		{"peer without port", xff, "203.0.113.7", XFF, []string{"198.51.100.1"}, "203.0.113.7"},

		// Through trusted proxies.
		{"one trusted proxy", xff, "10.0.0.1:80", XFF, []string{"198.51.100.9"}, "198.51.100.9"},
		{"single trusted address", xff, "192.0.2.1:80", XFF, []string{"198.51.100.9"}, "198.51.100.9"},
		{"client prepends a spoof", xff, "10.0.0.1:80", XFF, []string{"1.1.1.1, 198.51.100.9"}, "198.51.100.9"},
		{"client prepends a trusted-looking spoof", xff, "10.0.0.1:80", XFF, []string{"10.9.9.9, 198.51.100.9"}, "198.51.100.9"},
		{"two trusted proxies", xff, "10.0.0.2:80", XFF, []string{"198.51.100.9, 10.0.0.1"}, "198.51.100.9"},
		{"every hop trusted", xff, "10.0.0.1:80", XFF, []string{"10.0.0.3,10.0.0.2"}, "10.0.0.3"},
		{"trusted peer without header", xff, "10.0.0.1:80", "", nil, "10.0.0.1"},
		{"header lines walked last to first", xff, "10.0.0.1:80", XFF, []string{"1.1.1.1", "198.51.100.9"}, "198.51.100.9"},
		{"proxy on its own line", xff, "10.0.0.2:80", XFF, []string{"198.51.100.9", "10.0.0.1"}, "198.51.100.9"},
		{"empty elements skipped", xff, "10.0.0.1:80", XFF, []string{" , 198.51.100.9 ,, "}, "198.51.100.9"},
		{"only Forwarded read when so configured", fwd, "10.0.0.1:80", XFF, []string{"198.51.100.9"}, "10.0.0.1"},
		{"only XFF read when so configured", xff, "10.0.0.1:80", FWD, []string{"for=198.51.100.9"}, "10.0.0.1"},

		// Malformed hops reached by the walk: one shared key.
		{"garbage hop", xff, "10.0.0.1:80", XFF, []string{"garbage"}, ratelimit.UnknownClient},
		{"unknown hop", xff, "10.0.0.1:80", XFF, []string{"unknown"}, ratelimit.UnknownClient},
		{"garbage behind a trusted hop", xff, "10.0.0.2:80", XFF, []string{"198.51.100.9, nonsense, 10.0.0.1"}, ratelimit.UnknownClient},
		{"garbage left of the client is never reached", xff, "10.0.0.1:80", XFF, []string{"<script>, 198.51.100.9"}, "198.51.100.9"},
		{"IPv4 in brackets", xff, "10.0.0.1:80", XFF, []string{"[198.51.100.9]"}, ratelimit.UnknownClient},
		{"port out of range", xff, "10.0.0.1:80", XFF, []string{"198.51.100.9:70000"}, ratelimit.UnknownClient},
		{"non-IP peer (Unix socket)", xff, "@", XFF, []string{"198.51.100.9"}, ratelimit.UnknownClient},
		{"empty RemoteAddr", xff, "", "", nil, ratelimit.UnknownClient},

		// Ports, IPv6, zones, mapped addresses, grouping.
		{"XFF with port", xff, "10.0.0.1:80", XFF, []string{"198.51.100.9:4711"}, "198.51.100.9"},
		{"XFF bare IPv6", xff, "10.0.0.1:80", XFF, []string{"2001:db8:1:2:3:4:5:6"}, "2001:db8:1:2::/64"},
		{"XFF bracketed IPv6", xff, "10.0.0.1:80", XFF, []string{"[2001:db8:1:2::6]"}, "2001:db8:1:2::/64"},
		{"XFF bracketed IPv6 with port", xff, "10.0.0.1:80", XFF, []string{"[2001:db8:1:2::6]:443"}, "2001:db8:1:2::/64"},
		{"IPv6 peer grouped by /64", ratelimit.ClientIPConfig{}, "[2001:db8:1:2:aaaa::1]:80", "", nil, "2001:db8:1:2::/64"},
		{"IPv6 peer alone with /128", ratelimit.ClientIPConfig{IPv6PrefixLen: 128}, "[2001:db8:1:2:aaaa::1]:80", "", nil, "2001:db8:1:2:aaaa::1"},
		{"IPv4 grouped by /24", ratelimit.ClientIPConfig{IPv4PrefixLen: 24}, "203.0.113.7:80", "", nil, "203.0.113.0/24"},
		{"zone dropped from peer", ratelimit.ClientIPConfig{IPv6PrefixLen: 128}, "[fe80::1%eth0]:80", "", nil, "fe80::1"},
		{"zone dropped from hop", xff, "10.0.0.1:80", XFF, []string{"fe80::1%eth0"}, "fe80::/64"},
		{"IPv4-mapped peer unmapped", xff, "[::ffff:203.0.113.7]:80", "", nil, "203.0.113.7"},
		{"IPv4-mapped trusted peer", xff, "[::ffff:10.0.0.1]:80", XFF, []string{"198.51.100.9"}, "198.51.100.9"},
		{"IPv6 trusted proxy", xff, "[2001:db8:ffff:1::1]:80", XFF, []string{"198.51.100.9"}, "198.51.100.9"},
		{"IPv4-mapped trusted prefix", ratelimit.ClientIPConfig{TrustedProxies: []string{"::ffff:10.0.0.0/104"}}, "10.1.2.3:80", XFF, []string{"198.51.100.9"}, "198.51.100.9"},

		// Forwarded (RFC 7239).
		{"Forwarded for", fwd, "10.0.0.1:80", FWD, []string{"for=198.51.100.9;proto=https;by=10.0.0.1"}, "198.51.100.9"},
		{"Forwarded FOR is case-insensitive", fwd, "10.0.0.1:80", FWD, []string{"proto=https; For=198.51.100.9"}, "198.51.100.9"},
		{"Forwarded quoted IPv6 with port", fwd, "10.0.0.1:80", FWD, []string{`for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::/64"},
		{"Forwarded quoted IPv4 with port", fwd, "10.0.0.1:80", FWD, []string{`for="198.51.100.9:4711"`}, "198.51.100.9"},
		{"Forwarded quoted-pair", fwd, "10.0.0.1:80", FWD, []string{`for="198.51.100\.9"`}, "198.51.100.9"},
		{"Forwarded chain with spoof", fwd, "10.0.0.2:80", FWD, []string{"for=1.1.1.1, for=198.51.100.9, for=10.0.0.1"}, "198.51.100.9"},
		{"Forwarded unknown", fwd, "10.0.0.1:80", FWD, []string{"for=unknown"}, ratelimit.UnknownClient},
		{"Forwarded obfuscated", fwd, "10.0.0.1:80", FWD, []string{"for=_hidden"}, ratelimit.UnknownClient},
		{"Forwarded without for", fwd, "10.0.0.1:80", FWD, []string{"proto=https"}, ratelimit.UnknownClient},
		{"Forwarded for twice", fwd, "10.0.0.1:80", FWD, []string{"for=198.51.100.9;for=1.1.1.1"}, ratelimit.UnknownClient},
		{"Forwarded unterminated quote", fwd, "10.0.0.1:80", FWD, []string{`for="198.51.100.9`}, ratelimit.UnknownClient},
		{"Forwarded stray quote", fwd, "10.0.0.1:80", FWD, []string{`for="198."51.100.9"`}, ratelimit.UnknownClient},
		{"Forwarded broken spoof left of the client", fwd, "10.0.0.1:80", FWD, []string{`for="oops, for=198.51.100.9`}, "198.51.100.9"},
		{"Forwarded bare pair name", fwd, "10.0.0.1:80", FWD, []string{"for"}, ratelimit.UnknownClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClientIP(t, tt.cfg)
			got, ok := c.Key(request(tt.remote, tt.header, tt.values...))
			if got != tt.want || !ok {
				t.Errorf("Key = %q, %v; want %q, true", got, ok, tt.want)
			}
		})
	}
}

func TestClientIPAddr(t *testing.T) {
	c := newClientIP(t, ratelimit.ClientIPConfig{TrustedProxies: []string{"10.0.0.0/8"}})
	a, ok := c.Addr(request("10.0.0.1:80", "X-Forwarded-For", "[fe80::1%eth0]:80"))
	if want := netip.MustParseAddr("fe80::1"); a != want || !ok {
		t.Errorf("Addr = %v, %v; want %v (no zone), true", a, ok, want)
	}
	if a, ok := c.Addr(request("10.0.0.1:80", "X-Forwarded-For", "bogus")); ok || a.IsValid() {
		t.Errorf("Addr of an unidentifiable client = %v, %v; want invalid, false", a, ok)
	}
}

func TestNewClientIPValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  ratelimit.ClientIPConfig
	}{
		{"not an address", ratelimit.ClientIPConfig{TrustedProxies: []string{"proxy.internal"}}},
		{"bad CIDR", ratelimit.ClientIPConfig{TrustedProxies: []string{"10.0.0.0/33"}}},
		{"IPv4 /0", ratelimit.ClientIPConfig{TrustedProxies: []string{"0.0.0.0/0"}}},
		{"IPv6 /0", ratelimit.ClientIPConfig{TrustedProxies: []string{"::/0"}}},
		{"mapped /96 is every IPv4 address", ratelimit.ClientIPConfig{TrustedProxies: []string{"::ffff:0.0.0.0/96"}}},
		{"mapped prefix under 96 bits", ratelimit.ClientIPConfig{TrustedProxies: []string{"::ffff:0:0/90"}}},
		{"zone", ratelimit.ClientIPConfig{TrustedProxies: []string{"fe80::1%eth0"}}},
		{"empty entry", ratelimit.ClientIPConfig{TrustedProxies: []string{""}}},
		{"unknown header", ratelimit.ClientIPConfig{Header: 7}},
		{"IPv4PrefixLen 33", ratelimit.ClientIPConfig{IPv4PrefixLen: 33}},
		{"IPv4PrefixLen negative", ratelimit.ClientIPConfig{IPv4PrefixLen: -1}},
		{"IPv6PrefixLen 129", ratelimit.ClientIPConfig{IPv6PrefixLen: 129}},
	}
	for _, tt := range tests {
		if _, err := ratelimit.NewClientIP(tt.cfg); !errors.Is(err, ratelimit.ErrInvalidConfig) {
			t.Errorf("%s: NewClientIP = %v, want ErrInvalidConfig", tt.name, err)
		}
	}
	if _, err := ratelimit.NewClientIP(ratelimit.ClientIPConfig{TrustedProxies: []string{"10.0.0.1/8", "::1"}}); err != nil {
		t.Errorf("host bits in a prefix and a single IPv6 address: %v", err)
	}
}

// TestClientIPModel checks X-Forwarded-For resolution against a reference
// written the obvious way (split, reverse, skip trusted), over random
// chains of trusted, untrusted and malformed hops. Whatever the chain, an
// untrusted peer is its own key.
func TestClientIPModel(t *testing.T) {
	trusted := netip.MustParsePrefix("10.0.0.0/8")
	c := newClientIP(t, ratelimit.ClientIPConfig{TrustedProxies: []string{trusted.String()}})
	hop := rapid.SampledFrom([]string{"10.0.0.1", "10.2.3.4", "198.51.100.1", "198.51.100.2", "203.0.113.9:80", "junk", ""})
	rapid.Check(t, func(t *rapid.T) {
		peer := rapid.SampledFrom([]string{"10.0.0.7", "203.0.113.50"}).Draw(t, "peer")
		hops := rapid.SliceOfN(hop, 0, 6).Draw(t, "hops")
		r := request(peer+":443", "X-Forwarded-For", strings.Join(hops, ", "))

		want := peer
		if trusted.Contains(netip.MustParseAddr(peer)) {
		walk:
			for i := len(hops) - 1; i >= 0; i-- {
				h := hops[i]
				switch {
				case h == "":
					continue
				case h == "junk":
					want = ratelimit.UnknownClient
					break walk
				}
				h = strings.TrimSuffix(h, ":80")
				want = h
				if !trusted.Contains(netip.MustParseAddr(h)) {
					break
				}
			}
		}
		if got, _ := c.Key(r); got != want {
			t.Fatalf("peer %s, X-Forwarded-For %q: key %q, want %q", peer, hops, got, want)
		}
	})
}

// FuzzClientIP: no input panics, and an untrusted peer is always its own
// key.
func FuzzClientIP(f *testing.F) {
	f.Add("10.0.0.1:80", "198.51.100.9, 10.0.0.2", `for="[2001:db8::1]:80";proto=https`)
	f.Add("203.0.113.7:1", "\"", `for="\`)
	f.Add("[fe80::1%eth0]:1", "[::ffff:1.2.3.4]", "for=;;,,for")
	xff := newClientIP(f, ratelimit.ClientIPConfig{TrustedProxies: []string{"10.0.0.0/8"}})
	fwd := newClientIP(f, ratelimit.ClientIPConfig{TrustedProxies: []string{"10.0.0.0/8"}, Header: ratelimit.ProxyHeaderForwarded})
	f.Fuzz(func(t *testing.T, remote, x, fw string) {
		r := request(remote, "X-Forwarded-For", x)
		r.Header.Set("Forwarded", fw)
		for _, c := range []*ratelimit.ClientIP{xff, fwd} {
			key, ok := c.Key(r)
			if !ok || key == "" {
				t.Fatalf("Key = %q, %v", key, ok)
			}
			if ap, err := netip.ParseAddrPort(remote); err == nil && ap.Addr().Is4() && !netip.MustParsePrefix("10.0.0.0/8").Contains(ap.Addr()) {
				if key != ap.Addr().String() {
					t.Fatalf("untrusted peer %s keyed %q", remote, key)
				}
			}
		}
	})
}

// BenchmarkClientIPKey measures Key on a direct client and on a request
// that crossed two trusted proxies, for both headers.
func BenchmarkClientIPKey(b *testing.B) {
	trusted := []string{"10.0.0.0/8", "172.16.0.0/12"}
	cases := []struct {
		name   string
		cfg    ratelimit.ClientIPConfig
		remote string
		header string
		value  string
	}{
		{"direct/IPv4", ratelimit.ClientIPConfig{TrustedProxies: trusted}, "203.0.113.7:5000", "", ""},
		{"direct/IPv6", ratelimit.ClientIPConfig{TrustedProxies: trusted}, "[2001:db8:1:2::7]:5000", "", ""},
		{"xff/2-hops", ratelimit.ClientIPConfig{TrustedProxies: trusted}, "10.0.0.2:80", "X-Forwarded-For", "6.6.6.6, 198.51.100.9, 172.16.0.1"},
		{"forwarded/2-hops", ratelimit.ClientIPConfig{TrustedProxies: trusted, Header: ratelimit.ProxyHeaderForwarded}, "10.0.0.2:80", "Forwarded",
			`for=6.6.6.6, for="198.51.100.9:4711";proto=https, for=172.16.0.1;by=10.0.0.2`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ip := newClientIP(b, c.cfg)
			r := request(c.remote, c.header)
			if c.header != "" {
				r.Header.Set(c.header, c.value)
			}
			b.ReportAllocs()
			for b.Loop() {
				if k, _ := ip.Key(r); k == ratelimit.UnknownClient {
					b.Fatal("unknown client")
				}
			}
		})
	}
}
