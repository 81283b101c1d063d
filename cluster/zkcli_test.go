package cluster_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/zktest"
)

// zkCli is Debian's zookeeper package's command-line client.
const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"

// zkCliRun runs commands in one zkCli.sh session against addr and returns
// the lines they printed, in order (zkCli's own banner and watch events
// left out).
func zkCliRun(t *testing.T, addr string, commands ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", zkCli, "-server", addr)
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\nquit\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zkCli.sh: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case l == "", l == "WATCHER::", strings.HasPrefix(l, "WatchedEvent "), strings.HasPrefix(l, "Connecting to "),
			l == "Welcome to ZooKeeper!", strings.HasPrefix(l, "JLine support"):
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) != len(commands) {
		t.Fatalf("zkCli.sh printed %d lines for %d commands:\n%s", len(lines), len(commands), out)
	}
	return lines
}

// TestZkCliReadsStrataZnodes: ZooKeeper's own client, zkCli.sh, reads a
// strata cluster under its chroot as it reads a Kafka one: the
// registration, /controller, /controller_epoch, a topic's assignment and
// config and its config change notification are the bytes of the golden
// files taken from Kafka's formats, the partition state is Kafka's JSON in
// Kafka's key order, /cluster/id is Kafka's, and ls lists the broker and
// the topic.
func TestZkCliReadsStrataZnodes(t *testing.T) {
	if _, err := os.Stat(zkCli); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v; CI=true requires Debian's zookeeper package (scripts/deps.sh installs it)", zkCli, err)
		}
		t.Skipf("%s: %v", zkCli, err)
	}
	srv := zktest.Start(t)
	const chroot = "/kafka"
	z, err := cluster.DialZK(cluster.ZKConfig{Connect: srv.Addr() + chroot, SessionTimeout: 20 * time.Second,
		ConnectionTimeout: 30 * time.Second, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1700000000000)
	m := startMember(t, cluster.MemberConfig{ZK: z, BrokerID: 1, Now: func() time.Time { return at }, Logger: testLog(t),
		Endpoints: []cluster.Endpoint{{Listener: "PLAINTEXT", Host: "b1", Port: 9092}}})
	waitFor(t, 30*time.Second, "the controller", m.IsController)

	obs, err := cluster.DialZK(cluster.ZKConfig{Connect: srv.Addr() + chroot, SessionTimeout: 20 * time.Second,
		ConnectionTimeout: 30 * time.Second, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	admin := cluster.NewAdmin(obs)
	id, err := cluster.ParseUUID("ZOLr9CLNQjSW70hyIHx6BQ")
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact"}
	if _, err := admin.CreateTopic("T", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, configs, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "T led", func() bool {
		for p := int32(0); p < 3; p++ {
			if ok, _, err := obs.Exists(cluster.PartitionStatePath("T", p)); !ok || err != nil {
				return false
			}
		}
		return true
	})
	if err := admin.ChangeTopicConfig("T", configs); err != nil {
		t.Fatal(err)
	}

	golden := func(name string) string {
		b, err := os.ReadFile("testdata/znodes/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	// Broker 1 alone is live: it leads every partition with itself as the
	// ISR, at leader epoch 0 of controller epoch 1.
	state := `{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}`
	checks := []struct{ cmd, want string }{
		{"get " + chroot + cluster.BrokerPath(1), golden("broker_v5.json")},
		{"get " + chroot + cluster.ControllerPath, golden("controller_v1.json")},
		{"get " + chroot + cluster.ControllerEpochPath, "1"},
		{"get " + chroot + cluster.TopicPath("T"), golden("topic_v3.json")},
		{"get " + chroot + cluster.TopicConfigPath("T"), golden("topic_config.json")},
		{"get " + chroot + cluster.ConfigChangesPath + "/config_change_0000000000", golden("config_change_v2.json")},
		{"get " + chroot + cluster.PartitionStatePath("T", 0), state},
		{"get " + chroot + cluster.PartitionStatePath("T", 2), state},
		{"ls " + chroot + cluster.BrokerIDsPath, "[1]"},
		{"ls " + chroot + cluster.TopicsPath, "[T]"},
		{"ls " + chroot + cluster.TopicPath("T") + "/partitions", "[0, 1, 2]"},
	}
	cmds := []string{"get " + chroot + cluster.ClusterIDPath}
	for _, c := range checks {
		cmds = append(cmds, c.cmd)
	}
	got := zkCliRun(t, srv.Addr(), cmds...)
	if !regexp.MustCompile(`^\{"version":"1","id":"` + regexp.QuoteMeta(m.ClusterID()) + `"\}$`).MatchString(got[0]) {
		t.Errorf("zkCli.sh %s: %s, want Kafka's form with id %s", cmds[0], got[0], m.ClusterID())
	}
	for i, c := range checks {
		if got[i+1] != c.want {
			t.Errorf("zkCli.sh %s:\n got %s\nwant %s", c.cmd, got[i+1], c.want)
		}
	}
}
