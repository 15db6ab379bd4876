//go:build !linux

package engine

import "time"

// threadCPU reports that this platform has no per-thread CPU clock here.
func threadCPU() (time.Duration, bool) { return 0, false }
