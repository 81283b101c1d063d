package tools

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// kfakeClusterOf starts franz-go's kfake, an in-process Kafka cluster of n
// brokers (node ids 0..n-1) speaking the real protocol. It stands in for
// the multi-broker strata cluster until that exists: replication factors
// above 1, leaders spread over brokers, CreateTopics routed to a
// controller. Its ISR is always every replica, so the under-replicated and
// unavailable cases are covered over kadm values (topics_describe_test.go).
// It returns the cluster, for tests that steer it, and its addresses.
func kfakeClusterOf(t *testing.T, n int) (*kfake.Cluster, string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, strings.Join(c.ListenAddrs(), ",")
}

var partitionLineRE = regexp.MustCompile(`^\tTopic: (\S+)\tPartition: (\d+)\tLeader: (\S+)\tReplicas: ([\d,]*)\tIsr: ([\d,]*)$`)

// describedLines parses --describe's text: the topic lines and the
// partition lines, failing on any other line.
func describedLines(t *testing.T, out string) (headers []string, parts [][]string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "Topic: "):
			headers = append(headers, l)
		default:
			m := partitionLineRE.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("not a partition line: %q", l)
			}
			parts = append(parts, m[1:])
		}
	}
	return headers, parts
}

// TestTopicsKfakeCluster runs strata topics against a three-broker kfake
// cluster: replication factor 3 by count and by --replica-assignment, a
// replication factor above the broker count refused with Kafka's error,
// partitions added with an assignment, the report flags on a healthy
// cluster, regex delete.
func TestTopicsKfakeCluster(t *testing.T) {
	c, addr := kfakeClusterOf(t, 3)
	mustTopics(t, ExitOK, addr, "--create", "--topic", "r3", "--partitions", "6", "--replication-factor", "3")
	// kfake draws each leader at random (all six on one broker 1 time in
	// 243): spread them, so the report must show several.
	for p := range int32(6) {
		if err := c.MoveTopicPartition("r3", p, p%3); err != nil {
			t.Fatal(err)
		}
	}
	r := mustTopics(t, ExitOK, addr, "--describe", "--topic", "r3")
	headers, parts := describedLines(t, r.stdout)
	if len(headers) != 1 || !strings.Contains(headers[0], "\tPartitionCount: 6\tReplicationFactor: 3\t") || !strings.Contains(headers[0], "\tTopicId: ") {
		t.Errorf("topic line: %q", headers)
	}
	if len(parts) != 6 {
		t.Fatalf("%d partition lines, want 6:\n%s", len(parts), r.stdout)
	}
	leaders := map[string]bool{}
	for i, p := range parts {
		replicas := strings.Split(p[3], ",")
		seen := map[string]bool{}
		for _, b := range replicas {
			if b != "0" && b != "1" && b != "2" || seen[b] {
				t.Errorf("partition %d: replicas %s: want three distinct brokers of 0,1,2", i, p[3])
			}
			seen[b] = true
		}
		if p[1] != strconv.Itoa(i) || len(replicas) != 3 || p[4] != p[3] || !seen[p[2]] || p[2] != strconv.Itoa(int(c.LeaderFor("r3", int32(i)))) {
			t.Errorf("partition line %d: %q (leader %d)", i, p, c.LeaderFor("r3", int32(i)))
		}
		leaders[p[2]] = true
	}
	if len(leaders) < 2 {
		t.Errorf("all six partitions led by %v", leaders)
	}

	r = mustTopics(t, ExitProblems, addr, "--create", "--topic", "r4", "--partitions", "1", "--replication-factor", "4")
	if !strings.Contains(r.stderr, "INVALID_REPLICATION_FACTOR") {
		t.Errorf("replication factor 4 of 3 brokers: %s", r.stderr)
	}

	mustTopics(t, ExitOK, addr, "--create", "--topic", "ra", "--replica-assignment", "0:1:2,1:2:0", "--config", "min.insync.replicas=3")
	mustTopics(t, ExitOK, addr, "--alter", "--topic", "ra", "--partitions", "3", "--replica-assignment", "0:1:2,1:2:0,2:0:1")
	r = mustTopics(t, ExitOK, addr, "--describe", "--topic", "ra")
	headers, parts = describedLines(t, r.stdout)
	if len(headers) != 1 || !strings.Contains(headers[0], "\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=3") || len(parts) != 3 {
		t.Errorf("ra after --alter:\n%s", r.stdout)
	}
	if parts[2][2] != "2" {
		t.Errorf("the added partition is led by %s, want 2 (the first replica of 2:0:1)", parts[2][2])
	}
	r = mustTopics(t, ExitProblems, addr, "--alter", "--topic", "ra", "--partitions", "4", "--replica-assignment", "0:1:2,1:2:0,2:0:1,2:0:9")
	if !strings.Contains(r.stderr, "INVALID_REPLICA_ASSIGNMENT") {
		t.Errorf("assignment to broker 9: %s", r.stderr)
	}

	for _, flag := range []string{"--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions"} {
		if r := mustTopics(t, ExitOK, addr, "--describe", flag); r.stdout != "" {
			t.Errorf("%s on a healthy cluster:\n%s", flag, r.stdout)
		}
	}
	// min.insync.replicas=3 with three in sync: every partition of ra is at it.
	r = mustTopics(t, ExitOK, addr, "--describe", "--at-min-isr-partitions")
	if headers, parts = describedLines(t, r.stdout); len(headers) != 0 || len(parts) != 3 || parts[0][0] != "ra" {
		t.Errorf("--at-min-isr-partitions:\n%s", r.stdout)
	}

	mustTopics(t, ExitOK, addr, "--delete", "--topic", "r.*")
	if r := mustTopics(t, ExitOK, addr, "--list", "--exclude-internal"); r.stdout != "" {
		t.Errorf("after deleting r.*: %q", r.stdout)
	}
}

// TestTopicsOlderBrokers: against a broker of Kafka 0.10.0 (no CreateTopics,
// no DescribeConfigs) the actions that need them exit 2 naming the missing
// request; against Kafka 2.0 (no ListPartitionReassignments, key 46)
// --describe still works without the reassignment columns, as Kafka's
// TopicCommand does.
func TestTopicsOlderBrokers(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(kversion.V0_10_0()), kfake.SeedTopics(1, "seeded"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	old := c.ListenAddrs()[0]
	for _, cmd := range []struct {
		args []string
		want string
	}{
		{[]string{"--create", "--topic", "x"}, "the broker does not support CreateTopics (key 19)"},
		{[]string{"--describe"}, "the broker does not support DescribeConfigs (key 32)"},
	} {
		if r := runTopicsCmd(t, old, cmd.args...); r.code != ExitUsage || !strings.Contains(r.stderr, cmd.want) {
			t.Errorf("%v against Kafka 0.10.0: exit %d, stderr %q; want 2 and %q", cmd.args, r.code, r.stderr, cmd.want)
		}
	}
	if r := mustTopics(t, ExitOK, old, "--list"); r.stdout != "seeded\n" {
		t.Errorf("--list against Kafka 0.10.0: %q", r.stdout)
	}

	c2, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.MaxVersions(kversion.V2_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Close)
	addr := strings.Join(c2.ListenAddrs(), ",")
	mustTopics(t, ExitOK, addr, "--create", "--topic", "t", "--partitions", "2", "--replication-factor", "2")
	r := mustTopics(t, ExitOK, addr, "--describe", "--topic", "t")
	headers, parts := describedLines(t, r.stdout)
	if len(headers) != 1 || strings.Contains(headers[0], "TopicId") || !strings.Contains(headers[0], "ReplicationFactor: 2") || len(parts) != 2 {
		t.Errorf("--describe against Kafka 2.0 (no topic ids, no reassignments):\n%s", r.stdout)
	}
}

// TestTopicsAlterAssignmentOnWire: --alter with --replica-assignment sends
// the new partitions' replicas; when the topic already has every listed
// partition it sends an empty list, which the broker refuses, not a null
// one, which would let the broker place replicas nobody asked for. Without
// --replica-assignment the list is null. The requests are read as kfake
// decodes them off the socket.
func TestTopicsAlterAssignmentOnWire(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := strings.Join(c.ListenAddrs(), ",")
	mustTopics(t, ExitOK, addr, "--create", "--topic", "t", "--partitions", "2", "--replication-factor", "2")
	seen := make(chan []kmsg.CreatePartitionsRequestTopicAssignment, 8)
	c.ControlKey(int16(kmsg.CreatePartitions), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		seen <- kreq.(*kmsg.CreatePartitionsRequest).Topics[0].Assignment
		return nil, nil, false // observed only: kfake answers as usual
	})
	sent := func(args ...string) []kmsg.CreatePartitionsRequestTopicAssignment {
		t.Helper()
		runTopicsCmd(t, addr, append([]string{"--alter", "--topic", "t"}, args...)...)
		select {
		case a := <-seen:
			return a
		case <-time.After(10 * time.Second):
			t.Fatalf("no CreatePartitions for %v", args)
			return nil
		}
	}
	if a := sent("--partitions", "3", "--replica-assignment", "0:1,1:2,2:0"); len(a) != 1 || fmt.Sprint(a[0].Replicas) != "[2 0]" {
		t.Errorf("growing 2 -> 3: assignment %+v, want the third partition's [2 0]", a)
	}
	if a := sent("--partitions", "3", "--replica-assignment", "0:1,1:2,2:0"); a == nil || len(a) != 0 {
		t.Errorf("nothing left to place: assignment %#v, want an empty non-null list", a)
	}
	if a := sent("--partitions", "4"); a != nil {
		t.Errorf("without --replica-assignment: assignment %#v, want null", a)
	}
}
