package typed_test

import (
	"testing"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/typed"
)

// hook is a string Codec that runs onDecode (if set) inside each Decode:
// a deterministic way to make another writer act between a Map's read and
// its write, where a real race would need luck.
type hook struct {
	onDecode func()
}

func (h *hook) Encode(dst []byte, v string) ([]byte, error) { return append(dst, v...), nil }
func (h *hook) Decode(src []byte) (string, error) {
	if f := h.onDecode; f != nil {
		h.onDecode = nil
		f()
	}
	return string(src), nil
}

// TestGetAndDeleteMissReturnsZero: a GetAndDelete that finds the key gone
// on its retry (another caller deleted it between its read and its
// delete) reports a miss, and a miss has the zero V, as Get's does: not
// the value it read and did not remove, which the other caller removed
// and returned, so that a caller ignoring loaded would see one value
// removed twice.
func TestGetAndDeleteMissReturnsZero(t *testing.T) {
	tests := []struct {
		name      string
		interfere func(e *engine.Engine)
		wantV     string
		wantOK    bool
	}{
		{"deleted in between", func(e *engine.Engine) { e.Delete("k") }, "", false},
		{"replaced in between", func(e *engine.Engine) { e.Set("k", []byte("second")) }, "second", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newEngine(t)
			h := &hook{}
			m := newMap(t, e, typed.Config[string]{Codec: h})
			if _, err := m.Set("k", "first"); err != nil {
				t.Fatal(err)
			}
			h.onDecode = func() { tt.interfere(e) }
			v, ok, err := m.GetAndDelete("k")
			if v != tt.wantV || ok != tt.wantOK || err != nil {
				t.Errorf("GetAndDelete = %q, %v, %v; want %q, %v, nil", v, ok, err, tt.wantV, tt.wantOK)
			}
			if _, ok := e.Get("k"); ok {
				t.Error("key still present")
			}
		})
	}
}
