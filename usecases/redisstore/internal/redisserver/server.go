// Package redisserver starts throwaway redis-server processes for tests: on
// 127.0.0.1, on a free port, with no persistence and a private data
// directory, killed when the test ends. If no server binary is installed
// the test is skipped with a message saying how to install one, except
// when the CI environment variable is set: then it fails, so that a CI run
// never passes by skipping the Redis suite.
package redisserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Binaries are the server executables looked for on PATH, in order.
var Binaries = []string{"redis-server", "valkey-server"}

// Server is one redis-server process.
type Server struct {
	// Addr is host:port, stable across Restart.
	Addr string

	tb    testing.TB
	bin   string
	port  int
	dir   string
	pre   []string // arguments before the options (a config file, --sentinel)
	extra []string // more server arguments

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Find returns the path of a server binary, or "" if none is installed.
func Find() string {
	for _, b := range Binaries {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	return ""
}

// Start starts a fresh server for tb and stops it when tb ends. It skips tb
// if no server binary is installed (fails if CI is set).
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb)
}

func start(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	return startWith(tb, nil, extra...)
}

// startWith starts a server with arguments pre before the usual options
// and extra after them.
func startWith(tb testing.TB, pre []string, extra ...string) *Server {
	tb.Helper()
	bin := Find()
	if bin == "" {
		msg := "redisserver: no redis-server or valkey-server on PATH; install one (Debian: apt-get install -y redis-server) to run the Redis backend tests"
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set: the Redis suite must run)")
		}
		tb.Skip(msg)
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), pre: pre, extra: extra}
	tb.Cleanup(s.Kill)
	var err error
	for range 5 { // a free port may be taken between probe and bind
		s.port, err = freePort()
		if err != nil {
			continue
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		if err = s.start(); err == nil {
			return s
		}
	}
	tb.Fatalf("redisserver: cannot start %s: %v", bin, err)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	args := append(append([]string(nil), s.pre...),
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"),
		"--maxmemory-policy", "noeviction",
	)
	cmd := exec.Command(s.bin, append(args, s.extra...)...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pid, err := serverPID(s.Addr); err == nil {
			if pid == cmd.Process.Pid {
				break
			}
			// Another test's server took the port between freePort's
			// probe and this server's bind: this one exits (the port is
			// in use), and a client of Addr would reach the other.
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("the server answering on %s is process %d, not ours (%d): the port was taken", s.Addr, pid, cmd.Process.Pid)
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited at start-up; log: %s", s.log())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server on %s did not answer PING within 10s; log: %s", s.Addr, s.log())
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	return nil
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// serverPID asks the server at addr for its process id (INFO server), so
// that a caller can tell its own server from another one bound to the
// same port.
func serverPID(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil {
		return 0, fmt.Errorf("INFO server answered %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO server from %s has no process_id", addr)
}

// Kill stops the server at once (SIGKILL: a crash, nothing saved) and
// waits for it to exit. It is a no-op if the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT) // in case it was paused
	cmd.Process.Kill()
	<-done
}

// Restart starts the server again on the same port, empty (a restart of a
// server without persistence), after Kill.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	var err error
	for range 50 { // the port may linger briefly
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.tb.Fatalf("redisserver: restart on %s: %v", s.Addr, err)
}

// Pause freezes the server (SIGSTOP): connections stay open, nothing
// answers. Resume undoes it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(sig)
	}
}

// Client returns a client of the server with go-redis's default timeouts
// (3 s reads), closed when the test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	return s.ClientTimeout(tb, 0)
}

// ClientTimeout returns a client whose dial, read and write timeouts are d
// (0: go-redis's defaults), closed when the test ends. A short d makes a
// fault show quickly.
func (s *Server) ClientTimeout(tb testing.TB, d time.Duration) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:          s.Addr,
		DialTimeout:   d,
		ReadTimeout:   d,
		WriteTimeout:  d,
		MaxRetries:    1, // Backend's scripts are never retried; this is for TIME
		DialerRetries: 1,
		PoolSize:      128,
	})
	tb.Cleanup(func() { c.Close() })
	return c
}
