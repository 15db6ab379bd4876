package redisstore

import (
	"strconv"
	"strings"
	"sync"
)

// numSlots is the number of Redis Cluster hash slots.
const numSlots = 16384

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// hashTag returns the part of key Redis Cluster hashes: the bytes between
// the first '{' and the next '}', if that is non-empty, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// slot returns key's Redis Cluster hash slot.
func slot(key string) int { return int(crc16(hashTag(key)) % numSlots) }

var (
	slotTagsOnce sync.Once
	slotTags     []string
)

// slotTag returns a short string that hashes to slot s: the version counter
// of slot s is the key "…{tag}", so a script can update it together with
// any key of that slot, on a single node or a Cluster alike. The table is
// built once, by trying short strings until every slot has one (about
// 170,000 CRC16s, a few milliseconds).
func slotTag(s int) string {
	slotTagsOnce.Do(func() {
		slotTags = make([]string, numSlots)
		left := numSlots
		for i := 0; left > 0; i++ {
			tag := strconv.FormatInt(int64(i), 36)
			if sl := crc16(tag) % numSlots; slotTags[sl] == "" {
				slotTags[sl] = tag
				left--
			}
		}
	})
	return slotTags[s]
}
