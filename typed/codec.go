package typed

import (
	"encoding"
	"encoding/json"
)

// A Codec turns values of type V into bytes and back.
//
// Encode appends the encoding of v to dst and returns the extended slice,
// or returns another slice that holds the encoding alone (v itself, say).
// The engine copies the result; the Map then reuses dst, and never a slice
// that is not dst's memory. Decode decodes src into a V; src is only valid
// during the call: a Decode that keeps bytes must copy them, as
// encoding.BinaryUnmarshaler's contract also requires.
//
// A Codec must be safe for concurrent use.
type Codec[V any] interface {
	Encode(dst []byte, v V) ([]byte, error)
	Decode(src []byte) (V, error)
}

// JSON returns the codec that stores V as encoding/json does.
func JSON[V any]() Codec[V] { return jsonCodec[V]{} }

type jsonCodec[V any] struct{}

func (jsonCodec[V]) Encode(dst []byte, v V) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	if len(dst) == 0 {
		return b, nil
	}
	return append(dst, b...), nil
}

func (jsonCodec[V]) Decode(src []byte) (V, error) {
	var v V
	err := json.Unmarshal(src, &v)
	return v, err
}

// Binary returns the codec that stores V through its own
// encoding.BinaryMarshaler and encoding.BinaryUnmarshaler methods (using
// encoding.BinaryAppender when V has it, to encode without an extra
// buffer). The type parameter P is inferred: Binary[Point]() compiles only
// if *Point has both methods.
func Binary[V any, P interface {
	*V
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}]() Codec[V] {
	return binaryCodec[V]{}
}

// binaryCodec finds the methods at run time; Binary checks at compile time
// that they exist, and defaultCodec that they exist before choosing it.
type binaryCodec[V any] struct{}

func (binaryCodec[V]) Encode(dst []byte, v V) ([]byte, error) {
	switch m := any(&v).(type) {
	case encoding.BinaryAppender:
		return m.AppendBinary(dst)
	case encoding.BinaryMarshaler:
		b, err := m.MarshalBinary()
		if err != nil {
			return dst, err
		}
		if len(dst) == 0 {
			return b, nil
		}
		return append(dst, b...), nil
	}
	panic("typed: binaryCodec on a type without MarshalBinary") // unreachable: guarded by Binary and defaultCodec
}

func (binaryCodec[V]) Decode(src []byte) (V, error) {
	var v V
	err := any(&v).(encoding.BinaryUnmarshaler).UnmarshalBinary(src)
	return v, err
}

// Bytes returns the codec that stores a []byte as is (a copy of it).
func Bytes() Codec[[]byte] { return bytesCodec{} }

type bytesCodec struct{}

func (bytesCodec) Encode(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil }
func (bytesCodec) Decode(src []byte) ([]byte, error)           { return append([]byte{}, src...), nil }

// String returns the codec that stores a string as its bytes.
func String() Codec[string] { return stringCodec{} }

type stringCodec struct{}

func (stringCodec) Encode(dst []byte, v string) ([]byte, error) { return append(dst, v...), nil }
func (stringCodec) Decode(src []byte) (string, error)           { return string(src), nil }

// defaultCodec is the codec of a Config without one: String for string,
// Bytes for []byte, Binary if *V has MarshalBinary and UnmarshalBinary,
// and JSON otherwise.
func defaultCodec[V any]() Codec[V] {
	p := new(V)
	switch any(*p).(type) {
	case string:
		return any(String()).(Codec[V])
	case []byte:
		return any(Bytes()).(Codec[V])
	}
	_, m := any(p).(encoding.BinaryMarshaler)
	_, u := any(p).(encoding.BinaryUnmarshaler)
	if m && u {
		return binaryCodec[V]{}
	}
	return jsonCodec[V]{}
}
