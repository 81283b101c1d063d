package tools

import (
	"strings"
	"testing"
	"time"
)

// eventually runs strata topics until its output satisfies ok (a broker
// learns of the controller's decisions a little after they are made).
func eventually(t *testing.T, what, addr string, ok func(groupsOut) bool, args ...string) groupsOut {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := runTopicsCmd(t, addr, args...)
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: strata topics %s: exit %d\nstdout:\n%s\nstderr:\n%s", what, strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTopicsClusterLifecycle drives strata topics against three strata
// brokers on a real ZooKeeper, as the seed's walk-through and Kafka 3's
// way: --zookeeper --create writes the assignment znode and the
// brokers' controller picks it up (--bootstrap-server --describe shows it
// led with a full ISR); --bootstrap-server --create with
// --replica-assignment and --config, --list, --alter --partitions,
// --delete; --unavailable-partitions lists a partition whose only replica's
// broker stopped, and (once they moved) none of those broker led with
// another ISR member.
func TestTopicsClusterLifecycle(t *testing.T) {
	bs, connect := startClusterBrokersZK(t, 3)
	addr := bs[0].Addr().String()
	zk := []string{"--zookeeper", connect}

	// The seed's way: the assignment znode, led by the brokers.
	eventually(t, "create through ZooKeeper once three brokers registered", "", func(r groupsOut) bool {
		return r.code == ExitOK && r.stdout == "Created topic seed.\n"
	}, append(zk, "--create", "--topic", "seed", "--partitions", "2", "--replication-factor", "3")...)
	eventually(t, "seed led with a full ISR", addr, func(r groupsOut) bool {
		return r.code == ExitOK && strings.Contains(r.stdout, "PartitionCount: 2\tReplicationFactor: 3") &&
			strings.Count(r.stdout, "\tIsr: ") == 2 && !strings.Contains(r.stdout, "Leader: none") &&
			countFullISRs(r.stdout, 3) == 2
	}, "--describe", "--topic", "seed")

	// Kafka 3's way.
	r := mustTopics(t, ExitOK, addr, "--create", "--topic", "cfg", "--replica-assignment", "1:2,2:3,3:1", "--config", "retention.ms=12345")
	if r.stdout != "Created topic cfg.\n" {
		t.Fatalf("create cfg: %q", r.stdout)
	}
	eventually(t, "cfg described with its assignment and config", addr, func(r groupsOut) bool {
		return r.code == ExitOK && strings.Contains(r.stdout, "PartitionCount: 3\tReplicationFactor: 2") &&
			strings.Contains(r.stdout, "retention.ms=12345") &&
			strings.Contains(r.stdout, "Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: ") &&
			strings.Contains(r.stdout, "Partition: 1\tLeader: 2\tReplicas: 2,3\tIsr: ") &&
			strings.Contains(r.stdout, "Partition: 2\tLeader: 3\tReplicas: 3,1\tIsr: ")
	}, "--describe", "--topic", "cfg")
	if r := mustTopics(t, ExitProblems, addr, "--create", "--topic", "cfg", "--partitions", "1", "--replication-factor", "1"); !strings.Contains(r.stderr, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("cfg created twice: %q", r.stderr)
	}
	eventually(t, "both topics listed", addr, func(r groupsOut) bool {
		return r.code == ExitOK && strings.Contains(r.stdout, "cfg\n") && strings.Contains(r.stdout, "seed\n")
	}, "--list")

	mustTopics(t, ExitOK, addr, "--alter", "--topic", "cfg", "--partitions", "5")
	eventually(t, "cfg grown to 5 partitions, all led", addr, func(r groupsOut) bool {
		return r.code == ExitOK && strings.Contains(r.stdout, "PartitionCount: 5\t") &&
			strings.Count(r.stdout, "\tLeader: ") == 5 && !strings.Contains(r.stdout, "Leader: none")
	}, "--describe", "--topic", "cfg")
	if r := mustTopics(t, ExitProblems, addr, "--alter", "--topic", "cfg", "--partitions", "4"); !strings.Contains(r.stderr, "INVALID_PARTITIONS") {
		t.Fatalf("shrinking cfg: %q", r.stderr)
	}

	mustTopics(t, ExitOK, addr, "--delete", "--topic", "seed")
	eventually(t, "seed gone", addr, func(r groupsOut) bool {
		return r.code == ExitOK && !strings.Contains(r.stdout, "seed") && strings.Contains(r.stdout, "cfg\n")
	}, "--list")

	// A partition whose only replica's broker stops is unavailable.
	mustTopics(t, ExitOK, addr, "--create", "--topic", "solo", "--replica-assignment", "3")
	eventually(t, "solo led by broker 3", addr, func(r groupsOut) bool {
		return r.code == ExitOK && strings.Contains(r.stdout, "Topic: solo\tPartition: 0\tLeader: 3\t")
	}, "--describe", "--topic", "solo")
	if r := mustTopics(t, ExitOK, addr, "--describe", "--unavailable-partitions"); r.stdout != "" {
		t.Fatalf("unavailable partitions with every broker up:\n%s", r.stdout)
	}
	bs[2].Close()
	// cfg's partitions led by broker 3 move to a live ISR member: only
	// solo stays.
	eventually(t, "solo unavailable, and only it", addr, func(r groupsOut) bool {
		return r.code == ExitOK && strings.Contains(r.stdout, "Topic: solo\tPartition: 0\tLeader: none\t") &&
			strings.Count(r.stdout, "Topic: ") == 1
	}, "--describe", "--unavailable-partitions")
}

// countFullISRs counts the partition lines whose ISR has n members.
func countFullISRs(out string, n int) int {
	c := 0
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "\tIsr: "); i >= 0 && len(strings.Split(line[i+len("\tIsr: "):], ",")) == n {
			c++
		}
	}
	return c
}
