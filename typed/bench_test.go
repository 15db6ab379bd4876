package typed_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tidekv/tide/engine"
	"github.com/tidekv/tide/typed"
)

// record is a typical small JSON document: its encoding is about
// 40 + len(Body) bytes.
type record struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Body string `json:"body"`
}

const benchKeys = 1024

func benchEngine(b *testing.B) *engine.Engine {
	e, err := engine.New(engine.Config{ExpiryInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

func benchKeyNames() []string {
	ks := make([]string, benchKeys)
	for i := range ks {
		ks[i] = "k" + strconv.Itoa(i)
	}
	return ks
}

// BenchmarkGet compares a read through the byte API (AppendGet into a
// reused buffer: the engine's fastest read), through the byte API plus a
// hand-written json.Unmarshal (what users write without this package), and
// through Map with the JSON, string and binary codecs.
func BenchmarkGet(b *testing.B) {
	for _, size := range []int{16, 256, 4096} {
		rec := record{ID: 42, Name: "ada", Body: strings.Repeat("x", size)}
		enc, _ := json.Marshal(rec)
		keys := benchKeyNames()
		b.Run(fmt.Sprintf("size=%d/bytes", size), func(b *testing.B) {
			e := benchEngine(b)
			for _, k := range keys {
				e.Set(k, enc)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			var buf []byte
			for i := 0; b.Loop(); i++ {
				buf, _ = e.AppendGet(buf[:0], keys[i%benchKeys])
			}
		})
		b.Run(fmt.Sprintf("size=%d/bytes+json", size), func(b *testing.B) {
			e := benchEngine(b)
			for _, k := range keys {
				e.Set(k, enc)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for i := 0; b.Loop(); i++ {
				v, _ := e.Get(keys[i%benchKeys])
				var r record
				if err := json.Unmarshal(v, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("size=%d/map-json", size), func(b *testing.B) {
			e := benchEngine(b)
			m, _ := typed.New(e, typed.Config[record]{})
			for _, k := range keys {
				m.Set(k, rec)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for i := 0; b.Loop(); i++ {
				if _, _, err := m.Get(keys[i%benchKeys]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("size=%d/map-string", size), func(b *testing.B) {
			e := benchEngine(b)
			m, _ := typed.New(e, typed.Config[string]{})
			for _, k := range keys {
				m.Set(k, string(enc))
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for i := 0; b.Loop(); i++ {
				m.Get(keys[i%benchKeys])
			}
		})
	}
	b.Run("size=16/map-binary", func(b *testing.B) {
		e := benchEngine(b)
		m, _ := typed.New(e, typed.Config[point]{})
		keys := benchKeyNames()
		for _, k := range keys {
			m.Set(k, point{1, 2})
		}
		b.ReportAllocs()
		b.SetBytes(16)
		for i := 0; b.Loop(); i++ {
			m.Get(keys[i%benchKeys])
		}
	})
}

// BenchmarkSet is BenchmarkGet for writes: the byte API with pre-encoded
// bytes, the byte API plus json.Marshal, and Map.
func BenchmarkSet(b *testing.B) {
	for _, size := range []int{16, 256, 4096} {
		rec := record{ID: 42, Name: "ada", Body: strings.Repeat("x", size)}
		enc, _ := json.Marshal(rec)
		keys := benchKeyNames()
		b.Run(fmt.Sprintf("size=%d/bytes", size), func(b *testing.B) {
			e := benchEngine(b)
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for i := 0; b.Loop(); i++ {
				e.Set(keys[i%benchKeys], enc)
			}
		})
		b.Run(fmt.Sprintf("size=%d/bytes+json", size), func(b *testing.B) {
			e := benchEngine(b)
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for i := 0; b.Loop(); i++ {
				v, _ := json.Marshal(rec)
				e.Set(keys[i%benchKeys], v)
			}
		})
		b.Run(fmt.Sprintf("size=%d/map-json", size), func(b *testing.B) {
			e := benchEngine(b)
			m, _ := typed.New(e, typed.Config[record]{})
			b.ReportAllocs()
			b.SetBytes(int64(len(enc)))
			for i := 0; b.Loop(); i++ {
				if _, err := m.Set(keys[i%benchKeys], rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("size=16/map-binary", func(b *testing.B) {
		e := benchEngine(b)
		m, _ := typed.New(e, typed.Config[point]{})
		keys := benchKeyNames()
		b.ReportAllocs()
		b.SetBytes(16)
		for i := 0; b.Loop(); i++ {
			m.Set(keys[i%benchKeys], point{1, 2})
		}
	})
}

// BenchmarkMix90 is a parallel 90% read / 10% write mix on Map[record]
// (JSON, 256-byte body) beside the same mix on the byte API with
// pre-encoded values.
func BenchmarkMix90(b *testing.B) {
	rec := record{ID: 42, Name: "ada", Body: strings.Repeat("x", 256)}
	enc, _ := json.Marshal(rec)
	keys := benchKeyNames()
	b.Run("bytes", func(b *testing.B) {
		e := benchEngine(b)
		for _, k := range keys {
			e.Set(k, enc)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var buf []byte
			for i := 0; pb.Next(); i++ {
				k := keys[(i*7919)%benchKeys]
				if i%10 == 0 {
					e.Set(k, enc)
				} else {
					buf, _ = e.AppendGet(buf[:0], k)
				}
			}
		})
	})
	b.Run("map-json", func(b *testing.B) {
		e := benchEngine(b)
		m, _ := typed.New(e, typed.Config[record]{})
		for _, k := range keys {
			m.Set(k, rec)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				k := keys[(i*7919)%benchKeys]
				if i%10 == 0 {
					m.Set(k, rec)
				} else {
					m.Get(k)
				}
			}
		})
	})
}
