package embedded_test

import (
	"testing"

	"github.com/tidekv/tide/usecases/store/storetest"
)

func TestConfigLimits(t *testing.T) {
	storetest.RunConfigLimits(t, storetest.Embedded)
}
