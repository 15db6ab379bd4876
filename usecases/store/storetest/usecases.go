package storetest

import "testing"

// RunUseCases runs every adapter's contract suite (sessions, flags, rate
// limits, idempotency, leases, cache helpers) on a backend.
func RunUseCases(t *testing.T, newFixture NewFunc) {
	newFixture = instrument(newFixture)
	t.Run("RateLimit", func(t *testing.T) { RunRateLimit(t, newFixture) })
	t.Run("Lease", func(t *testing.T) { RunLease(t, newFixture) })
	t.Run("Idempotency", func(t *testing.T) { RunIdempotency(t, newFixture) })
	t.Run("Session", func(t *testing.T) { RunSession(t, newFixture) })
	t.Run("Flag", func(t *testing.T) { RunFlag(t, newFixture) })
	t.Run("Cache", func(t *testing.T) { RunCache(t, newFixture) })
	t.Run("ConfigLimits", func(t *testing.T) { RunConfigLimits(t, newFixture) })
}
