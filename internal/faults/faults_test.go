package faults

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// scenarioKillLeader: SIGKILL the leader of partition 0 under load; a new
// leader from the ISR takes over once the killed broker's session
// expires, and writes go on; the killed broker restarts, truncates by
// leader epoch where its log diverged, and rejoins every ISR.
func scenarioKillLeader(t *testing.T, zs *zktest.Server) {
	c := newCluster(t, zs, clusterOpts{})
	c.createTopic(nil)
	l := startLoad(t, c, 0)
	l.waitAcks("writes before the fault", [numParts]int{}, ackWindow)
	for r := 0; r < rounds(t); r++ {
		st := c.waitFullISR("every ISR full before the kill")
		old := st[0]
		victim := c.broker(old.leader)
		mark := l.ackCounts()
		t0 := time.Now()
		victim.kill()
		c.waitState(faultTimeout, "partition 0 led again without the killed broker", func(st map[int32]partView) bool {
			pv := st[0]
			return pv.leader != old.leader && pv.epoch > old.epoch && !slices.Contains(pv.isr, old.leader)
		})
		l.waitAcks("writes go on after the kill", mark, ackWindow)
		if d, ok := l.firstAckAfter(0, t0); ok {
			measure(t, "failover after SIGKILL of the leader (broker %d): partition 0 acknowledged again %v after the kill (floor: session timeout + 1 s = %v)",
				old.leader, d.Round(time.Millisecond), time.Duration(sessionTimeoutMs)*time.Millisecond+time.Second)
		}
		truncs := victim.logCount("msg=truncating")
		victim.start()
		c.waitFullISR("the restarted broker back in every ISR")
		t.Logf("round %d: broker %d killed and restarted; it truncated %d times", r, old.leader, victim.logCount("msg=truncating")-truncs)
		l.waitAcks("writes after the restart", l.ackCounts(), ackWindow)
	}
	c.finish(l)
}
