// Package zktest runs a real ZooKeeper (Debian's zookeeper package, Java's
// QuorumPeerMain, standalone) for tests, the same way everywhere: a free
// port on 127.0.0.1, zoo.cfg and the data in t.TempDir(), ready when it
// answers ruok with imok and srvr with its mode (imok alone comes before it
// serves requests), stopped at cleanup.
//
// Without java or the zookeeper jar the test is skipped, except under
// CI=true where it fails (scripts/deps.sh installs the package).
//
// The server's tickTime is 500 ms with minSessionTimeout 1 s, so tests can
// use short session timeouts (expiry within timeout + one tick); Kafka's
// 18 s default still fits under maxSessionTimeout (60 s).
package zktest

import (
	"fmt"
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

	"github.com/stratalog/strata/internal/zkproc"
)

// Where Debian's package puts things (real-components.md).
const (
	ZooKeeperJar = zkproc.ZooKeeperJar
	SLF4JJar     = zkproc.SLF4JJar
	ConfDir      = zkproc.ConfDir
)

// StartTimeout bounds how long a start may take before the test fails (a
// loaded 2-core machine starts a JVM slowly; it usually takes ~2 s).
var StartTimeout = 60 * time.Second

// Server is one running (or stopped) standalone ZooKeeper.
type Server struct {
	Port int
	Dir  string // zoo.cfg, data/, logs/

	t   testing.TB
	mu  sync.Mutex
	cmd *exec.Cmd
	ex  chan struct{} // closed when cmd exits
}

// Addr is host:port for zookeeper.connect.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Available reports whether java and Debian's ZooKeeper jar are here, and
// why not.
func Available() (string, error) { return zkproc.Available() }

// Start starts a ZooKeeper for t and stops it at t's cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("zktest: %v; CI=true requires ZooKeeper (scripts/deps.sh installs it)", err)
		}
		t.Skipf("zktest: %v", err)
	}
	s := &Server{t: t, Dir: t.TempDir()}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("zktest: ZooKeeper on port %d, %s", s.Port, s.logTail())
		}
	})
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("zktest: %v", err)
		}
		s.Port = port
		if last = s.start(); last == nil {
			return s
		}
		s.Stop()
		if !strings.Contains(last.Error(), "Address already in use") {
			break
		}
	}
	t.Fatalf("zktest: %v", last)
	return nil
}

// Restart starts the stopped server again on the same port and data (its
// sessions and znodes come back from the data dir, as ZooKeeper's do).
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("zktest: restart: %v", err)
	}
}

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Stop kills the server (SIGTERM, then SIGKILL after 5 s) and waits for it;
// a no-op when it is not running.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, ex := s.cmd, s.ex
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ex:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-ex
	}
}

// Kill stops the server with SIGKILL, as a crash.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, ex := s.cmd, s.ex
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-ex
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("already running")
	}
	java, err := Available()
	if err != nil {
		return err
	}
	data, logs := filepath.Join(s.Dir, "data"), filepath.Join(s.Dir, "logs")
	for _, d := range []string{data, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cfg := filepath.Join(s.Dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(ZooCfg(data, s.Port)), 0o644); err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(logs, "zk.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(java, JavaArgs(logs, cfg)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting java: %v", err)
	}
	ex := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(ex)
	}()
	s.cmd, s.ex = cmd, ex
	deadline := time.Now().Add(StartTimeout)
	for {
		if s.ready() {
			return nil
		}
		select {
		case <-ex:
			s.cmd = nil
			return fmt.Errorf("ZooKeeper exited at start; %s", s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-ex
			s.cmd = nil
			return fmt.Errorf("ZooKeeper did not answer ruok within %v; %s", StartTimeout, s.logTail())
		}
	}
}

// ready: ruok answers imok as soon as the process listens, before the
// server serves requests; srvr then tells when it does.
func (s *Server) ready() bool { return zkproc.Ready(s.Addr()) }

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "logs", "zk.out"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "last lines of zk.out:\n" + strings.Join(lines, "\n")
}

// ZooCfg is the zoo.cfg every strata test and `scripts/zk.sh` use
// (internal/zkproc's).
func ZooCfg(dataDir string, port int) string { return zkproc.ZooCfg(dataDir, port) }

// JavaArgs is the java command line after "java" (internal/zkproc's).
func JavaArgs(logDir, cfg string) []string { return zkproc.JavaArgs(logDir, cfg) }

// FourLetter sends a four-letter command (ruok, srvr, mntr, ...) and
// returns the answer.
func FourLetter(addr, cmd string) (string, error) { return zkproc.FourLetter(addr, cmd) }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
