module github.com/tidekv/tide/usecases/redisstore

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tidekv/tide v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/btree v1.1.3 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
