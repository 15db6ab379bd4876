package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/tidekv/tide/usecases/redisstore/internal/redisserver"
)

// TestMain lets the test binary act as a replica: the scene re-executes
// os.Executable(), which under go test is this binary.
func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestScene(t *testing.T) {
	srv := redisserver.Start(t)
	var out, errb bytes.Buffer
	code := Main([]string{"-redis", srv.Addr, "-budget", "500", "-requests", "800"}, &out, &errb)
	t.Log("\n" + out.String())
	if code != 0 {
		t.Fatalf("exit status %d; stderr: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "admitted  1000  (2.0× the budget)") {
		t.Errorf("the per-process limiters did not admit twice the budget")
	}
	if !strings.Contains(out.String(), "admitted   500  (1.0× the budget)") {
		t.Errorf("the shared limiter did not admit exactly the budget")
	}
}
