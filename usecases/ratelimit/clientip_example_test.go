package ratelimit_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/tidekv/tide/usecases/ratelimit"
)

func ExampleClientIP() {
	// Behind a load balancer in 10.0.0.0/8 that appends to X-Forwarded-For.
	ip, err := ratelimit.NewClientIP(ratelimit.ClientIPConfig{TrustedProxies: []string{"10.0.0.0/8"}})
	if err != nil {
		panic(err)
	}
	// ip.Key is a KeyFunc: pass it as MiddlewareConfig.Key.

	// Through the load balancer: the address it appended.
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.5:41000"
	r.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.9") // 6.6.6.6 was sent by the client
	fmt.Println(ip.Key(r))

	// Straight to the server: the header is not believed.
	r.RemoteAddr = "203.0.113.7:52000"
	fmt.Println(ip.Key(r))

	// IPv6 clients share a limit per /64.
	r.RemoteAddr = "[2001:db8:1:2:aaaa::1]:52000"
	fmt.Println(ip.Key(r))
	// Output:
	// 198.51.100.9 true
	// 203.0.113.7 true
	// 2001:db8:1:2::/64 true
}
