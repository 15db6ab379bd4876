//go:build !unix

package engine

// processCPU reports that the platform's CPU time is not read.
func processCPU() (int64, bool) { return 0, false }
