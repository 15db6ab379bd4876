package redisstore_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidekv/tide/usecases/cache"
	"github.com/tidekv/tide/usecases/redisstore"
	"github.com/tidekv/tide/usecases/session"
)

// A service that runs as several processes keeps its sessions and cache in
// Redis: the same adapters, one constructor changed. (Compiled, not run: it
// needs a server.)
func ExampleNew() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	b, err := redisstore.New(redisstore.Config{Client: rdb, Prefix: "shop:"})
	if err != nil {
		log.Fatal(err)
	}
	// Refuse to start on a server that could evict fencing counters or
	// flags (maxmemory-policy allkeys-*), or is older than Redis 7.0.
	if err := b.Check(ctx); err != nil {
		log.Fatal(err)
	}

	sessions, err := session.New(session.Config{Backend: b, IdleTimeout: 30 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	withSession, err := session.NewMiddleware(session.HTTPConfig{Manager: sessions})
	if err != nil {
		log.Fatal(err)
	}
	prices, err := cache.New(cache.Config{Name: "prices", Backend: b, TTL: 10 * time.Minute, RefreshAfter: 8 * time.Minute,
		Load: func(ctx context.Context, sku string) ([]byte, bool, error) { return []byte("39.90"), true, nil }})
	if err != nil {
		log.Fatal(err)
	}
	defer prices.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /price/{sku}", func(w http.ResponseWriter, r *http.Request) {
		v, found, err := prices.Get(r.Context(), r.PathValue("sku"))
		switch {
		case err != nil:
			http.Error(w, "catalog unavailable", http.StatusServiceUnavailable)
		case !found:
			http.NotFound(w, r)
		default:
			w.Write(v)
		}
	})
	log.Fatal(http.ListenAndServe(":8080", withSession(mux)))
}

// On Redis Cluster, pass a ClusterClient: every key one decision touches
// hashes to one slot.
func ExampleNew_cluster() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}})
	b, err := redisstore.New(redisstore.Config{Client: rdb})
	if err != nil {
		log.Fatal(err)
	}
	_ = b // hand b to the adapters as with a single node
}
