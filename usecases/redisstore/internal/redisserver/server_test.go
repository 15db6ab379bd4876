package redisserver

import (
	"strings"
	"testing"
)

// TestStartRefusesAPortAnotherServerHolds starts a server on a port that
// another server already holds, as happens when a parallel test's server
// binds the port between freePort's probe and this bind: the new process
// exits, but the old one answers on the address, so a start that only
// pinged the address took the other server for its own (TestSentinel's
// "replica" was once another test's master: role:master, no replica).
func TestStartRefusesAPortAnotherServerHolds(t *testing.T) {
	first := Start(t)
	second := &Server{tb: t, bin: first.bin, dir: t.TempDir(), port: first.port, Addr: first.Addr}
	t.Cleanup(second.Kill)
	err := second.start()
	if err == nil {
		t.Fatalf("start on %s, which another server holds: got nil error, want one saying the port was taken", first.Addr)
	}
	if !strings.Contains(err.Error(), "not ours") && !strings.Contains(err.Error(), "exited") {
		t.Fatalf("start on a taken port: got %v, want an error saying the answering server is not ours (or that ours exited)", err)
	}
	if pid, err := serverPID(first.Addr); err != nil || pid != first.cmd.Process.Pid {
		t.Fatalf("the first server after the refused start: pid %d, %v; want %d", pid, err, first.cmd.Process.Pid)
	}
}
