// Package fuzz holds tide's native Go fuzz targets. It has no API: every
// target is in a _test.go file and is run with go test -fuzz.
//
// Each target decodes the fuzzer's bytes into a sequence of operations,
// runs them against a fresh engine on a manual clock, and checks every
// result against a reference model of the semantics that package engine's
// documentation states, and against Engine.Check after every
// operation. The model learns which entries the engine reclaimed or evicted
// from the OnRemove listener, and checks that each removal was allowed (an
// expired entry was due; an evicted one was evictable and a write needed
// room; a deleted or replaced one was the operation's key).
//
// Run a target longer than CI does with, for example:
//
//	go test ./fuzz -run '^$' -fuzz '^FuzzEngineOps$' -fuzztime 10m
//
// See docs/RELIABILITY.md.
package fuzz
