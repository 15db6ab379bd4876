module github.com/tidekv/tide

go 1.24

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/google/btree v1.1.3
)

require pgregory.net/rapid v1.3.0
