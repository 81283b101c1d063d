package tools

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/zktest"
	"github.com/stratalog/strata/server"
)

func runElectCmd(t *testing.T, addr string, args ...string) groupsOut {
	t.Helper()
	stdout, stderr, code := run(t, append([]string{"elect-leaders", "--bootstrap-server", addr}, args...)...)
	return groupsOut{stdout, stderr, code}
}

var electLine = regexp.MustCompile(`Partition: 0\tLeader: (-?\d+|none)\tReplicas: ([\d,]+)\tIsr: ([\d,]+)`)

// waitLeader polls strata topics --describe until partition 0 of topic
// satisfies cond(leader, isr).
func waitLeader(t *testing.T, addr, topic, what string, cond func(leader, isr string) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := runTopicsCmd(t, addr, "--describe", "--topic", topic)
		if m := electLine.FindStringSubmatch(r.stdout); m != nil && cond(m[1], m[3]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q %s", what, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestElectLeadersAfterRestart: the preferred leader of el-0 (broker 1)
// stops, leadership moves to 2; back and in sync, `strata elect-leaders
// --election-type preferred` returns it, printing per partition what
// kafka-leader-election.sh prints; bad input is refused.
func TestElectLeadersAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three brokers")
	}
	zk := zktest.Start(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	start := func(id int) *server.Server {
		cfg, err := server.LoadConfig("", []string{"listeners=PLAINTEXT://127.0.0.1:0", "strata.metrics.listener=127.0.0.1:0", "log.dirs=" + dirs[id-1],
			"zookeeper.connect=" + zk.Addr() + "/elect-test", fmt.Sprintf("broker.id=%d", id),
			"zookeeper.session.timeout.ms=4000", "controlled.shutdown.enable=false", "auto.leader.rebalance.enable=false"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := server.Start(cfg, &server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	b1, b2 := start(1), start(2)
	start(3)
	addr := b2.Addr().String()
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := runTopicsCmd(t, addr, "--create", "--topic", "el", "--replica-assignment", "1:2:3")
		if r.code == ExitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: exit %d: %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	full := func(leader string) func(string, string) bool {
		return func(l, isr string) bool { return l == leader && len(strings.Split(isr, ",")) == 3 }
	}
	waitLeader(t, addr, "el", "el-0 led by 1 with a full ISR", full("1"))
	r := runElectCmd(t, addr, "--election-type", "preferred", "--topic", "el", "--partition", "0")
	if r.code != ExitOK || r.stdout != "Valid replica already elected for partitions el-0\n" {
		t.Fatalf("election not needed: exit %d %q %s", r.code, r.stdout, r.stderr)
	}

	b1.Close()
	waitLeader(t, addr, "el", "el-0 led by another broker", func(l, _ string) bool { return l != "1" })
	r = runElectCmd(t, addr, "--election-type", "preferred", "--topic", "el", "--partition", "0")
	if r.code != ExitProblems || !strings.Contains(r.stdout, "Error completing leader election (PREFERRED) for partition: el-0: PREFERRED_LEADER_NOT_AVAILABLE") {
		t.Fatalf("preferred replica down: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	start(1)
	waitLeader(t, addr, "el", "el-0 back in sync", func(l, isr string) bool { return l != "1" && len(strings.Split(isr, ",")) == 3 })
	r = runElectCmd(t, addr, "--election-type", "preferred", "--all-topic-partitions")
	if r.code != ExitOK || !strings.Contains(r.stdout, "Successfully completed leader election (PREFERRED) for partitions el-0\n") {
		t.Fatalf("preferred election: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	waitLeader(t, addr, "el", "el-0 led by 1 again", full("1"))
	r = runElectCmd(t, addr, "--election-type", "unclean", "--topic", "el", "--partition", "0")
	if r.code != ExitOK || r.stdout != "Valid replica already elected for partitions el-0\n" {
		t.Fatalf("unclean with a live leader: exit %d %q %s", r.code, r.stdout, r.stderr)
	}

	for _, bad := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--election-type", "sideways", "--all-topic-partitions"}, ExitUsage, "want preferred or unclean"},
		{[]string{"--all-topic-partitions"}, ExitUsage, "--election-type is required"},
		{[]string{"--election-type", "preferred"}, ExitUsage, "give exactly one of"},
		{[]string{"--election-type", "preferred", "--topic", "el"}, ExitUsage, "--topic and --partition go together"},
		{[]string{"--election-type", "preferred", "--topic", "el", "--partition", "7"}, ExitProblems, "el-7: UNKNOWN_TOPIC_OR_PARTITION"},
		{[]string{"--election-type", "preferred", "--path-to-json-file", writeFile(t, "e.json", `{"partitions":[{"topic":"el"`)}, ExitUsage, "malformed JSON"},
	} {
		r := runElectCmd(t, addr, bad.args...)
		if r.code != bad.code || !strings.Contains(r.stdout+r.stderr, bad.want) {
			t.Errorf("%v: exit %d (want %d) %q %q, want %q", bad.args, r.code, bad.code, r.stdout, r.stderr, bad.want)
		}
	}
}
