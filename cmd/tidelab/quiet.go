package main

import "sync/atomic"

// quiet suppresses the scene listener's output while set.
var quiet atomic.Bool
