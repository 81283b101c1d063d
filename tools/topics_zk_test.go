package tools

import (
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/zktest"
)

// zkCluster is a real ZooKeeper with three registered brokers whose
// Members run the controller (their listeners refuse connections: the
// znode writes are what these tests look at).
type zkCluster struct {
	srv     *zktest.Server
	zk      cluster.ZK
	admin   *cluster.Admin
	members map[int32]*cluster.Member
	connect string
}

func startZKCluster(t *testing.T, chroot string) *zkCluster {
	t.Helper()
	srv := zktest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens: the controller's requests fail and are retried
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := &zkCluster{srv: srv, members: map[int32]*cluster.Member{}, connect: srv.Addr() + chroot}
	for id := int32(1); id <= 3; id++ {
		m, err := cluster.JoinCluster(cluster.ZKConfig{Connect: c.connect, SessionTimeout: 20 * time.Second, Logger: quiet},
			cluster.MemberConfig{BrokerID: id, Logger: quiet, ControllerSocketTimeout: time.Second,
				Endpoints: []cluster.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: int32(port)}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		c.members[id] = m
	}
	z, err := cluster.DialZK(cluster.ZKConfig{Connect: c.connect, SessionTimeout: 20 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(z.Close)
	c.zk, c.admin = z, cluster.NewAdmin(z)
	return c
}

// waitLed waits until every partition of topic has a state znode with a
// leader in live.
func (c *zkCluster) waitLed(t *testing.T, topic string, n int, live ...int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for p := 0; p < n && ok; p++ {
			st, err := c.admin.PartitionState(topic, int32(p))
			ok = err == nil && st != nil && slices.Contains(live, st.Leader)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not every partition led by %v within 30 s", topic, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTopicsZooKeeper drives strata topics --zookeeper against a real
// ZooKeeper (with a chroot) holding three registered brokers and their
// controller: create (placed, explicit, refused), list, describe with the
// controller's states, alter, delete, and describe's offline view after a
// broker leaves.
func TestTopicsZooKeeper(t *testing.T) {
	c := startZKCluster(t, "/kafka")
	zk := []string{"--zookeeper", c.connect}
	r := mustTopics(t, 0, "", append(zk, "--create", "--topic", "orders", "--partitions", "6", "--replication-factor", "3",
		"--config", "retention.ms=1000")...)
	if r.stdout != "Created topic orders.\n" {
		t.Fatalf("create printed %q", r.stdout)
	}
	ta, _, err := c.admin.ReadAssignment("orders")
	if err != nil {
		t.Fatal(err)
	}
	reps, err := ta.Replicas()
	if err != nil || len(reps) != 6 {
		t.Fatalf("assignment %v %v", reps, err)
	}
	leaders := map[int32]int{}
	for _, rs := range reps {
		if len(rs) != 3 || rs[0] == rs[1] || rs[1] == rs[2] || rs[0] == rs[2] {
			t.Fatalf("partition replicas %v", rs)
		}
		leaders[rs[0]]++
	}
	if leaders[1] != 2 || leaders[2] != 2 || leaders[3] != 2 {
		t.Fatalf("preferred leaders not spread evenly: %v", leaders)
	}
	if cfg, _ := c.admin.TopicConfig("orders"); cfg["retention.ms"] != "1000" {
		t.Fatalf("/config/topics/orders %v", cfg)
	}

	r = mustTopics(t, 1, "", append(zk, "--create", "--topic", "orders", "--partitions", "1", "--replication-factor", "1")...)
	if !strings.Contains(r.stderr, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("second create: %q", r.stderr)
	}
	mustTopics(t, 0, "", append(zk, "--create", "--if-not-exists", "--topic", "orders", "--partitions", "1", "--replication-factor", "1")...)
	r = mustTopics(t, 1, "", append(zk, "--create", "--topic", "big", "--partitions", "1", "--replication-factor", "4")...)
	if !strings.Contains(r.stderr, "INVALID_REPLICATION_FACTOR") {
		t.Fatalf("rf 4 of 3 brokers: %q", r.stderr)
	}
	r = mustTopics(t, 1, "", append(zk, "--create", "--topic", "bad", "--replica-assignment", "1:9")...)
	if !strings.Contains(r.stderr, "INVALID_REPLICA_ASSIGNMENT") {
		t.Fatalf("unknown broker in the assignment: %q", r.stderr)
	}
	mustTopics(t, 0, "", append(zk, "--create", "--topic", "my.topic", "--partitions", "1", "--replication-factor", "1")...)
	r = mustTopics(t, 1, "", append(zk, "--create", "--topic", "my_topic", "--partitions", "1", "--replication-factor", "1")...)
	if !strings.Contains(r.stderr, "INVALID_TOPIC_EXCEPTION") || !strings.Contains(r.stderr, "collides with existing topics: my.topic") {
		t.Fatalf("colliding name: %q", r.stderr)
	}
	mustTopics(t, 0, "", append(zk, "--create", "--topic", "pinned", "--replica-assignment", "3:1,1:2")...)

	c.waitLed(t, "orders", 6, 1, 2, 3)
	c.waitLed(t, "pinned", 2, 1, 2, 3)
	r = mustTopics(t, 0, "", append(zk, "--describe", "--topic", "pinned")...)
	id, _, _ := c.admin.ReadAssignment("pinned")
	want := "Topic: pinned\tTopicId: " + cluster.UUIDString(id.TopicID) + "\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: \n" +
		"\tTopic: pinned\tPartition: 0\tLeader: 3\tReplicas: 3,1\tIsr: 3,1\n" +
		"\tTopic: pinned\tPartition: 1\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
	if r.stdout != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = mustTopics(t, 0, "", append(zk, "--describe", "--topic", "orders")...)
	if !strings.Contains(r.stdout, "PartitionCount: 6\tReplicationFactor: 3\tConfigs: retention.ms=1000\n") ||
		strings.Count(r.stdout, "\tTopic: orders\tPartition:") != 6 {
		t.Fatalf("describe orders:\n%s", r.stdout)
	}

	mustTopics(t, 0, "", append(zk, "--alter", "--topic", "orders", "--partitions", "8")...)
	c.waitLed(t, "orders", 8, 1, 2, 3)
	r = mustTopics(t, 1, "", append(zk, "--alter", "--topic", "orders", "--partitions", "2")...)
	if !strings.Contains(r.stderr, "INVALID_PARTITIONS") {
		t.Fatalf("shrinking: %q", r.stderr)
	}

	// broker 3 leaves: its replicas are offline, its partitions move
	c.members[3].Close()
	c.waitLed(t, "pinned", 2, 1, 2)
	r = mustTopics(t, 0, "", append(zk, "--describe", "--topic", "pinned", "--under-replicated-partitions")...)
	if want := "\tTopic: pinned\tPartition: 0\tLeader: 1\tReplicas: 3,1\tIsr: 1\n"; r.stdout != want {
		t.Fatalf("under-replicated:\n%s\nwant:\n%s", r.stdout, want)
	}

	mustTopics(t, 0, "", append(zk, "--delete", "--topic", "orders")...)
	r = mustTopics(t, 0, "", append(zk, "--list")...)
	// the controller cannot finish the deletion: the brokers never answer
	if r.stdout != "my.topic\norders - marked for deletion\npinned\n" {
		t.Fatalf("list:\n%s", r.stdout)
	}
	r = mustTopics(t, 1, "", append(zk, "--create", "--topic", "orders", "--partitions", "1", "--replication-factor", "1")...)
	if !strings.Contains(r.stderr, "marked for deletion") {
		t.Fatalf("create while marked for deletion: %q", r.stderr)
	}
	mustTopics(t, 1, "", append(zk, "--delete", "--topic", "nope")...)
}
