// Package usecases is the home of tide's use-case adapters, each its own
// package, all written against the backend seam in usecases/store:
//
//   - usecases/session: server-side web sessions (sliding idle timeout
//     capped by an absolute deadline, rotation, revocation, cookie
//     middleware);
//   - usecases/featureflag: feature flags (versioned CAS writes with an atomic
//     audit log, rollback, percentage rollout, kill switch, watchers,
//     bounded-staleness cache);
//   - usecases/ratelimit: token bucket (GCRA), fixed and sliding window
//     limiters with an explicit failure policy and RateLimit middleware;
//   - usecases/idempotency: idempotency keys with fingerprints, claims,
//     replay and crash recovery, and Idempotency-Key middleware;
//   - usecases/lease: leases with fencing tokens and a fenced resource;
//   - usecases/cache: read-through caching with TTL jitter, negative
//     caching and single-flight loading.
//
// usecases/store/embedded runs them on the in-process engine; a Redis or
// Valkey backend implements the same store.Backend. usecases/store/storetest
// holds the conformance suite and the adapters' contract suites, runnable
// on any backend. cmd/atlasmart shows all of them end to end.
package usecases
