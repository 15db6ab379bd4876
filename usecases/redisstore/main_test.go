package redisstore_test

import (
	"flag"
	"os"
	"testing"
)

// suiteParallel is how many parallel tests run at once unless -test.parallel
// is given: the four topology suites (single node twice, Cluster,
// Sentinel) spend most of their time sleeping on real time, so they run
// together whatever the number of cores (the default, GOMAXPROCS, would run
// them two by two on a 2-core machine and double the run time).
const suiteParallel = "4"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", suiteParallel)
	}
	os.Exit(m.Run())
}
