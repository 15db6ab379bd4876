module github.com/tidekv/tide/bench

go 1.26.0

require (
	github.com/Yiling-J/theine-go v0.6.3
	github.com/allegro/bigcache/v3 v3.1.0
	github.com/coocood/freecache v1.2.7
	github.com/dgraph-io/ristretto/v2 v2.4.2
	github.com/hashicorp/golang-lru/v2 v2.0.7
	github.com/jellydator/ttlcache/v3 v3.4.1
	github.com/maypok86/otter/v2 v2.4.0
	github.com/patrickmn/go-cache v2.1.0+incompatible
)

require github.com/google/btree v1.1.3 // indirect

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/klauspost/cpuid/v2 v2.0.9 // indirect
	github.com/tidekv/tide v0.0.0
	github.com/zeebo/xxh3 v1.0.2 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.36.0 // indirect
)
