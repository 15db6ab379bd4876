package sim

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tidekv/tide/evict"
)

func gz(t *testing.T, b []byte) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}

func TestReadTrace(t *testing.T) {
	be := func(v ...int64) []byte {
		var b []byte
		for _, x := range v {
			b = binary.BigEndian.AppendUint64(b, uint64(x))
		}
		return b
	}
	tests := []struct {
		name string
		in   []byte
		f    Format
		want []uint64
		err  bool
	}{
		{"arc expands count", []byte("10 3 0 1\n7 1 0 2\n"), ARC, []uint64{10, 11, 12, 7}, false},
		{"arc zero count", []byte("5 0 0 1\n6 1 0 2"), ARC, []uint64{6}, false},
		{"arc bad line", []byte("x 1 0 1\n"), ARC, nil, true},
		{"lirs skips blank and star", []byte("1\n*\n\n 2 \n3"), LIRS, []uint64{1, 2, 3}, false},
		{"lirs bad key", []byte("1\nabc\n"), LIRS, nil, true},
		{"int64 big endian", be(1, -1, 1<<40), Int64, []uint64{1, math.MaxUint64, 1 << 40}, false},
		{"int64 trailing partial", append(be(5), 1, 2), Int64, nil, true},
		{"empty", nil, LIRS, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadTrace(gz(t, tt.in), tt.f)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if !tt.err && !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := ReadTrace(bytes.NewReader([]byte("not gzip")), ARC); err == nil {
		t.Error("ReadTrace(not gzip) = nil error")
	}
}

func TestExactLRU(t *testing.T) {
	l := NewExactLRU(2)
	var got []bool
	for _, k := range []uint64{1, 2, 1, 3, 1, 3, 2, 1} {
		got = append(got, l.Access(k))
	}
	// 3 evicts 2 (least recent), 2 evicts 1, then 1 evicts 3.
	want := []bool{false, false, true, false, true, true, false, false}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestZipfDeterministic(t *testing.T) {
	a, b := Zipf(0.99, 1000, 5000, 7), Zipf(0.99, 1000, 5000, 7)
	if !slices.Equal(a, b) {
		t.Error("Zipf with the same seed differs")
	}
	if o1, o2 := OtterZipf(1000, 3), OtterZipf(1000, 3); !slices.Equal(o1, o2) {
		t.Error("OtterZipf with the same seed differs")
	}
	// The most popular key takes about 1/H(n,s) of the requests.
	counts := map[uint64]int{}
	for _, k := range Zipf(1.0001, 1000, 100000, 1) {
		counts[k]++
	}
	top := 0
	for _, c := range counts {
		top = max(top, c)
	}
	if top < 12000 || top > 14500 { // 1/H(1000,1.0001) ≈ 13.4%
		t.Errorf("top key share %d/100000, want about 13400", top)
	}
}

// smallTraces are the traces the reference checks run by default; OLTP is
// added unless -short.
var smallTraces = []string{"glimpse", "loop", "multi1", "multi2", "multi3", "sprite", "2_pools", "cpp", "cs", "ps", "zigzag", "backf", "corda"}

func referenceTraces(t *testing.T) []*Trace {
	if _, err := os.Stat(filepath.Join(TraceDir(), "lirs")); err != nil {
		t.Skipf("traces not found at %s (set %s): %v", TraceDir(), EnvTraces, err)
	}
	names := smallTraces
	if !testing.Short() {
		names = append(slices.Clone(names), "oltp")
	}
	var ts []*Trace
	for _, n := range names {
		ts = append(ts, Lookup(n))
	}
	return ts
}

func refCaps(name string) []int {
	var caps []int
	for c := range ReferenceLRU[name] {
		caps = append(caps, c)
	}
	slices.Sort(caps)
	return caps
}

// TestReferenceLRU checks the trace readers: an exact LRU must reproduce the
// published reference hit ratios within 0.1 point.
func TestReferenceLRU(t *testing.T) {
	for _, tr := range referenceTraces(t) {
		keys, err := tr.Keys()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range refCaps(tr.Name) {
			got := HitRatio(keys, NewExactLRU(c))
			if want := ReferenceLRU[tr.Name][c]; math.Abs(got-want) > 0.1 {
				t.Errorf("%s@%d: exact LRU %.2f, reference %.2f", tr.Name, c, got, want)
			}
		}
	}
}

// TestApproxLRU checks tide's allkeys-lru against the exact LRU: within one
// point on every reference row.
func TestApproxLRU(t *testing.T) {
	for _, tr := range referenceTraces(t) {
		keys, err := tr.Keys()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range refCaps(tr.Name) {
			exact := HitRatio(keys, NewExactLRU(c))
			pc := NewPolicyCache(evict.AllKeysLRU, c)
			got := HitRatio(keys, pc)
			if pc.Fault != nil {
				t.Fatal(pc.Fault)
			}
			if math.Abs(got-exact) > 1 {
				t.Errorf("%s@%d: allkeys-lru %.2f, exact LRU %.2f", tr.Name, c, got, exact)
			}
		}
	}
}

// TestPoliciesOnTraces runs every tide policy on a small trace through the
// engine-like adapter, which fails on any victim that is not live.
func TestPoliciesOnTraces(t *testing.T) {
	tr := Lookup("multi1")
	if _, err := os.Stat(filepath.Join(TraceDir(), "lirs")); err != nil {
		t.Skip("traces not found")
	}
	keys, err := tr.Keys()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range evict.Specs {
		if s.New == nil {
			continue
		}
		for _, c := range []int{1, 10, 500} {
			pc := NewPolicyCache(s, c)
			r := HitRatio(keys, pc)
			if pc.Fault != nil || r < 0 || r > 100 {
				t.Errorf("%s@%d: ratio %.2f, fault %v", s.Name, c, r, pc.Fault)
			}
		}
	}
}

func TestQuickRun(t *testing.T) {
	keys := Zipf(0.99, 5000, 20000, 1)
	cs := append(TideContenders(), LRUContender, Peers()[0])
	res := Run(keys, []int{100, 1000}, cs, 2)
	for i := range res {
		for j, r := range res[i] {
			if r <= 0 || r >= 100 {
				t.Errorf("%s: ratio %.2f", cs[j].Name, r)
			}
		}
	}
	tab := &Table{Trace: &Trace{Name: "t", Title: "t", Caps: []int{100, 1000}}, Contenders: cs, Ratios: res}
	var b bytes.Buffer
	WriteMarkdown(&b, []*Table{tab}, nil, "test", "no time")
	if !bytes.Contains(b.Bytes(), []byte("| 1k |")) {
		t.Errorf("markdown lacks the 1k row:\n%s", b.String())
	}
	if svg := SVG(tab); !bytes.HasPrefix([]byte(svg), []byte("<svg")) {
		t.Error("SVG does not start with <svg")
	}
}
