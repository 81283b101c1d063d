// Package zktest runs a real ZooKeeper for tests through internal/zkproc
// (Debian's zookeeper package, Java's QuorumPeerMain, standalone, the
// zoo.cfg and java command line strata uses everywhere): a free port on
// 127.0.0.1, its files in t.TempDir(), stopped at cleanup, the end of its
// log printed when the test failed.
//
// Without java or the zookeeper jar the test is skipped, except under
// CI=true where it fails (scripts/deps.sh installs the package).
//
// The server's tickTime is 500 ms with minSessionTimeout 1 s, so tests can
// use short session timeouts (expiry within timeout + one tick); Kafka's
// 18 s default still fits under maxSessionTimeout (60 s).
package zktest

import (
	"os"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/zkproc"
)

// StartTimeout bounds how long a start may take before the test fails (a
// loaded 2-core machine starts a JVM slowly; it usually takes ~2 s).
var StartTimeout = 60 * time.Second

// Server is one running (or stopped) standalone ZooKeeper: Port, Dir,
// Addr, Running, Stop (SIGTERM) and Kill (SIGKILL) are zkproc's.
type Server struct {
	*zkproc.Process
	t testing.TB
}

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
	p, err := zkproc.Start(t.TempDir(), 0, StartTimeout)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("zktest: ZooKeeper on port %d, %s", p.Port, p.LogTail())
		}
	})
	return &Server{Process: p, t: t}
}

// Restart starts the stopped server again on the same port and data (its
// sessions and znodes come back from the data dir, as ZooKeeper's do).
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.Process.Restart(StartTimeout); err != nil {
		s.t.Fatalf("zktest: restart: %v", err)
	}
}

// ZooCfg is the zoo.cfg every strata test and `scripts/zk.sh` use
// (internal/zkproc's).
func ZooCfg(dataDir string, port int) string { return zkproc.ZooCfg(dataDir, port) }

// FourLetter sends a four-letter command (ruok, srvr, mntr, ...) and
// returns the answer.
func FourLetter(addr, cmd string) (string, error) { return zkproc.FourLetter(addr, cmd) }
