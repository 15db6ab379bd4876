package flag_test

import (
	"errors"
	"testing"

	"github.com/tidekv/tide/usecases/flag"
	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.RunFlag(t, storetest.Embedded)
}

func TestNewRejects(t *testing.T) {
	b, _ := storetest.NewEmbedded(t)
	for i, c := range []flag.Config{{}, {Backend: b, MaxStaleness: -1}, {Backend: b, AuditKeep: -1}} {
		if _, err := flag.New(c); !errors.Is(err, flag.ErrInvalidConfig) {
			t.Errorf("case %d: got %v, want ErrInvalidConfig", i, err)
		}
	}
}

func TestBucketStable(t *testing.T) {
	cases := []struct {
		flag, salt, unit string
	}{{"a", "", "u"}, {"checkout", "s1", "user-42"}, {"", "", ""}}
	for _, c := range cases {
		b := flag.Bucket(c.flag, c.salt, c.unit)
		if b < 0 || b >= flag.Buckets || b != flag.Bucket(c.flag, c.salt, c.unit) {
			t.Errorf("Bucket(%q, %q, %q) = %d: want a stable value in 0..9999", c.flag, c.salt, c.unit, b)
		}
	}
	if flag.Bucket("ab", "", "c") == flag.Bucket("a", "", "bc") && flag.Bucket("ab", "x", "c") == flag.Bucket("a", "x", "bc") {
		t.Error("Bucket does not separate its fields")
	}
}
