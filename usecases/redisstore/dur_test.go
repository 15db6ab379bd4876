package redisstore

import (
	"math"
	"testing"
	"time"
)

// TestDurationsSaturate checks the conversion of a script's microseconds
// and of a PTTL's milliseconds: a TTL of up to math.MaxInt64 ns, rounded
// up to whole milliseconds by the server, is more than a Duration holds; it
// must read as the longest Duration, never wrap to a negative one.
func TestDurationsSaturate(t *testing.T) {
	const max = time.Duration(math.MaxInt64)
	for _, c := range []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"us(1)", us(int64(1)), time.Microsecond},
		{"us(max/1000)", us(int64(math.MaxInt64 / 1000)), time.Duration(math.MaxInt64/1000) * time.Microsecond},
		{"us(max/1000 + 1)", us(int64(math.MaxInt64/1000 + 1)), max},
		{"us(9223372036855000)", us(int64(9223372036855000)), max},
		{"us(-5)", us(int64(-5)), -5 * time.Microsecond},
		{"us(min/1000 - 1)", us(int64(math.MinInt64/1000 - 1)), time.Duration(math.MinInt64)},
		{"ms(1)", ms(1), time.Millisecond},
		{"ms(9223372036854)", ms(9223372036854), 9223372036854 * time.Millisecond},
		{"ms(9223372036855)", ms(9223372036855), max},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}
