package typed

import "errors"

var (
	// ErrDecode reports a stored value the Map's codec could not decode.
	// The value is left as it was; the wrapping error names the key and
	// carries the codec's error.
	ErrDecode = errors.New("tide: cannot decode value")
	// ErrEncode reports a value the Map's codec could not encode. Nothing
	// was written.
	ErrEncode = errors.New("tide: cannot encode value")
	// ErrInvalidConfig reports a Config that cannot work (a nil engine);
	// the wrapping error says which field.
	ErrInvalidConfig = errors.New("tide: invalid typed map config")
)
