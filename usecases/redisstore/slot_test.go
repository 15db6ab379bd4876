package redisstore

import "testing"

func TestSlot(t *testing.T) {
	// Reference values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"123456789":                 0x31C3 % numSlots,
		"foo":                       12182,
		"{user1000}.following":      slot("user1000"),
		"foo{}{bar}":                slot("foo{}{bar}"),
		"foo{{bar}}zap":             slot("{bar"),
		"tide:lease:{orders}:fence": slot("orders"),
	} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16 = %#x, want 0x31c3", got)
	}
	for s := range numSlots {
		if got := slot(slotTag(s)); got != s {
			t.Fatalf("slotTag(%d) = %q hashes to %d", s, slotTag(s), got)
		}
	}
}
