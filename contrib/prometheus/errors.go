package tideprom

import "errors"

// ErrInvalidConfig reports a Config that cannot work; the wrapping error
// says which field.
var ErrInvalidConfig = errors.New("tide: invalid prometheus collector config")
