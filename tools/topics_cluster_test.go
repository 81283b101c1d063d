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

// startClusterBrokers starts n in-process brokers (ids 1..n) of one
// cluster on a real ZooKeeper and waits until each knows them all.
func startClusterBrokers(t *testing.T, n int) []*server.Server {
	t.Helper()
	bs, _ := startClusterBrokersZK(t, n)
	return bs
}

// startClusterBrokersZK is startClusterBrokers that also returns the
// cluster's zookeeper.connect (with its chroot).
func startClusterBrokersZK(t *testing.T, n int) ([]*server.Server, string) {
	t.Helper()
	return startClusterBrokersWith(t, n)
}

// startClusterBrokersWith is startClusterBrokersZK with more broker
// properties.
func startClusterBrokersWith(t *testing.T, n int, extra ...string) ([]*server.Server, string) {
	t.Helper()
	zk := zktest.Start(t)
	connect := zk.Addr() + "/topics-test"
	var out []*server.Server
	for id := 1; id <= n; id++ {
		cfg, err := server.LoadConfig("", append([]string{"listeners=PLAINTEXT://127.0.0.1:0", "strata.metrics.listener=127.0.0.1:0", "log.dirs=" + t.TempDir(),
			"zookeeper.connect=" + connect, fmt.Sprintf("broker.id=%d", id),
			"zookeeper.session.timeout.ms=4000", "controlled.shutdown.enable=false"}, extra...), nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := server.Start(cfg, &server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out, connect
}

var clusterPartitionLine = regexp.MustCompile(`Partition: 0\tLeader: (\d+)\tReplicas: (\d+,\d+,\d+)\tIsr: ([\d,]+)`)

// TestTopicsAgainstCluster: strata topics --bootstrap-server against a
// three-broker cluster: --create with replication factor 3 (sent to the
// controller), --describe with Kafka's Leader/Replicas/Isr line, and
// --under-replicated-partitions once a replica's broker is gone.
func TestTopicsAgainstCluster(t *testing.T) {
	bs := startClusterBrokers(t, 3)
	addr := bs[0].Addr().String()
	deadline := time.Now().Add(60 * time.Second)
	for {
		// The first create may race the brokers' registration: retry
		// until all three are known (INVALID_REPLICATION_FACTOR before).
		r := runTopicsCmd(t, addr, "--create", "--topic", "my-replicated-topic", "--partitions", "1", "--replication-factor", "3")
		if r.code == ExitOK {
			if !strings.Contains(r.stdout, "Created topic my-replicated-topic.") {
				t.Fatalf("create: %q", r.stdout)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: exit %d: %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var m []string
	for deadline := time.Now().Add(60 * time.Second); ; {
		// The broker asked may hear of the topic a little after the
		// controller that created it.
		r := runTopicsCmd(t, addr, "--describe", "--topic", "my-replicated-topic")
		out := r.stdout
		if m = clusterPartitionLine.FindStringSubmatch(out); r.code == ExitOK && m != nil && len(strings.Split(m[3], ",")) == 3 {
			if !strings.Contains(out, "PartitionCount: 1\tReplicationFactor: 3") {
				t.Fatalf("describe: %q", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe never showed a full ISR: exit %d %q %s", r.code, out, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if under := mustTopics(t, ExitOK, addr, "--describe", "--under-replicated-partitions").stdout; under != "" {
		t.Fatalf("under-replicated with every broker up: %q", under)
	}
	// Stop a broker that is not the leader and not the one we ask.
	var stop *server.Server
	for _, b := range bs[1:] {
		if fmt.Sprint(b.NodeID()) != m[1] {
			stop = b
			break
		}
	}
	stop.Close()
	for deadline := time.Now().Add(60 * time.Second); ; {
		under := mustTopics(t, ExitOK, addr, "--describe", "--under-replicated-partitions").stdout
		if strings.Contains(under, "Topic: my-replicated-topic\tPartition: 0\tLeader: "+m[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never under-replicated after broker %d stopped: %q", stop.NodeID(), under)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
