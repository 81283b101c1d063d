package faults

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stratalog/strata/internal/zktest"
)

// rounds is how many times each scenario repeats its fault
// (STRATA_FAULTS_ROUNDS, default 1).
func rounds(t testing.TB) int {
	s := os.Getenv("STRATA_FAULTS_ROUNDS")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("STRATA_FAULTS_ROUNDS=%q: want a positive number", s)
	}
	return n
}

// measurements collects the figures the scenarios measure, printed
// together at the end of TestFaults.
var measurements struct {
	sync.Mutex
	lines []string
}

func measure(t testing.TB, format string, args ...any) {
	t.Helper()
	s := fmt.Sprintf(format, args...)
	t.Log(s)
	measurements.Lock()
	measurements.lines = append(measurements.lines, t.Name()+": "+s)
	measurements.Unlock()
}

// TestFaults runs the fault scenarios of issue 18 (doc.go), each on a
// cluster of its own (its own chroot on one real ZooKeeper), one after
// the other.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three broker processes per scenario")
	}
	zs := zktest.Start(t)
	for _, sc := range []struct {
		name string
		run  func(*testing.T, *zktest.Server)
	}{
		{"kill-leader", scenarioKillLeader},
		{"kill-two", scenarioKillTwo},
		{"stop-follower", scenarioStopFollower},
		{"isolate-leader", scenarioIsolateLeader},
		{"expire-sessions", scenarioExpireSessions},
		{"disk-full", scenarioDiskFull},
		{"rolling-restart", scenarioRollingRestart},
		{"two-down", scenarioTwoDown},
		{"reassign", scenarioReassign},
	} {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, zs) })
	}
	measurements.Lock()
	defer measurements.Unlock()
	if len(measurements.lines) > 0 {
		t.Logf("measurements (zookeeper.session.timeout.ms=%d, replica.lag.time.max.ms=%d):\n%s",
			sessionTimeoutMs, lagTimeMaxMs, strings.Join(measurements.lines, "\n"))
	}
}
