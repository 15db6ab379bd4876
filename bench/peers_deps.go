//go:build tools

package bench

import (
	_ "github.com/Yiling-J/theine-go"
	_ "github.com/allegro/bigcache/v3"
	_ "github.com/coocood/freecache"
	_ "github.com/dgraph-io/ristretto/v2"
	_ "github.com/hashicorp/golang-lru/v2"
	_ "github.com/jellydator/ttlcache/v3"
	_ "github.com/maypok86/otter/v2"
	_ "github.com/patrickmn/go-cache"
)
