package cache_test

import (
	"testing"

	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/store/storetest"
)

// New validates Config.Prefix by the rule every adapter shares (see
// Config.Prefix): it accepted anything. A '{' took the Redis Cluster hash
// tag to where it pleased; a control byte or a 64 KiB prefix reached every
// key (the latter failing every store call, so that every Get went to the
// origin); and a prefix over another adapter's key space let a caller's
// key name another adapter's key: with Prefix "tide:" and Name "rl", the
// cache key "tb:{k:10.0.0.1}" is "tide:rl:k:tb:{k:10.0.0.1}", the state of
// a default-prefixed rate limiter named "k" for 10.0.0.1, which a fill
// would overwrite.
func TestNewValidatesPrefix(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	storetest.AdapterPrefix(t, "tide:cache:", "tide:lease:", cache.ErrInvalidConfig, func(p string) error {
		_, err := cache.New(cache.Config{Backend: b, Name: "products", Prefix: p})
		return err
	})
}
