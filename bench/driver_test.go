package bench

import (
	"errors"
	"slices"
	"testing"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/evict"
)

func TestLastJSONLine(t *testing.T) {
	tests := []struct {
		name, out, want string
		err             error
	}{
		{"one line", `{"a":1}` + "\n", `{"a":1}`, nil},
		{"last of several, noise around", "log line\n{\"a\":1}\n  {\"a\":2}  \nPASS\n", `{"a":2}`, nil},
		{"no trailing newline", `{"a":3}`, `{"a":3}`, nil},
		{"none", "goroutine dump\nexit status 2\n", "", ErrNoResult},
		{"empty", "", "", ErrNoResult},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LastJSONLine([]byte(tt.out))
			if !errors.Is(err, tt.err) || string(got) != tt.want {
				t.Errorf("LastJSONLine(%q) = %q, %v; want %q, %v", tt.out, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestSplitComma(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"", nil}, {",", nil}, {"a", []string{"a"}}, {"a,,b, c ,", []string{"a", "b", "c"}},
	} {
		if got := SplitComma(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("SplitComma(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(slices.Clone(tt.in)); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// The "all" sweeps keep their peers; the capped configurations are found
// by name and as a group, and the recommended policy is a real, evicting
// one of evict's built-ins.
func TestCappedPeersAreSeparateAndFound(t *testing.T) {
	all, err := ParsePeers("all")
	if err != nil || !slices.Equal(all, PeerNames()) {
		t.Fatalf(`ParsePeers("all") = %v, %v`, all, err)
	}
	capped, err := ParsePeers("capped")
	if err != nil || !slices.Equal(capped, CappedNames()) {
		t.Fatalf(`ParsePeers("capped") = %v, %v`, capped, err)
	}
	for _, n := range capped {
		if slices.Contains(all, n) {
			t.Errorf("capped configuration %s is in the all sweep", n)
		}
		if _, err := Lookup(n); err != nil {
			t.Errorf("Lookup(%s): %v", n, err)
		}
	}
	if _, err := ParsePeers("tide,otter-capped"); err != nil {
		t.Errorf("a mixed list: %v", err)
	}
	if _, err := ParsePeers("tide,nope"); err == nil {
		t.Error("ParsePeers accepted an unknown name")
	}
	if !slices.ContainsFunc(evict.Specs, func(s evict.Spec) bool { return s.Name == RecommendedPolicy.Name }) || RecommendedPolicy.New == nil {
		t.Errorf("RecommendedPolicy %q is not an evicting built-in policy", RecommendedPolicy.Name)
	}
}

// A bounded tide is capped at headroom × entries × (key + value +
// EntryOverhead) accounted bytes: exactly N entries' worth for tide-exact,
// the exact-capacity check.
func TestTideHeadroomIsTheCap(t *testing.T) {
	const n = 20_000
	for _, tt := range []struct {
		peer     string
		headroom float64
	}{{"tide-exact", 1}, {"tide-capped", CappedHeadroom}, {"tide-lru", DefaultHeadroom}} {
		p, err := Lookup(tt.peer)
		if err != nil {
			t.Fatal(err)
		}
		c := p.New(Options{Entries: n, KeyLen: KeyLen, ValueLen: ValueLen})
		st := Engine(c).Stats()
		want := int64(tt.headroom * n * (KeyLen + ValueLen + engine.EntryOverhead))
		if st.MaxBytes != want {
			t.Errorf("%s: MaxBytes %d, want %d", tt.peer, st.MaxBytes, want)
		}
		c.Close()
	}
}

func TestSupportsFollowsTheAdapter(t *testing.T) {
	for _, name := range []string{"tide", "otter-capped", "go-cache"} {
		p, _ := Lookup(name)
		c := p.New(Options{Entries: 16, KeyLen: KeyLen, ValueLen: ValueLen})
		_, copier := c.(Copier)
		_, viewer := c.(Viewer)
		if !Supports(c, ReadAppend) || Supports(c, ReadCopy) != copier || Supports(c, ReadView) != viewer {
			t.Errorf("%s: Supports disagrees with the adapter's methods", name)
		}
		if name == "tide" && !copier {
			t.Error("the tide adapter lost GetCopy (tide's Get)")
		}
		c.Close()
	}
}

func TestTHPModeReadsTheSelectedWord(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"always [madvise] never\n", "madvise"},
		{"[always] madvise never\n", "always"},
		{"always madvise [never]", "never"},
		{"always madvise never", ""},
		{"", ""},
	} {
		if got := thpMode(tt.in); got != tt.want {
			t.Errorf("thpMode(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
