package engine

import (
	"github.com/tidekv/tide/evict"
	"github.com/tidekv/tide/internal/table"
)

func evictHandle(slot uint32) evict.Handle { return evict.Handle(slot) }

func tableTag(h uint64) uint32 { return table.Tag(h) }
