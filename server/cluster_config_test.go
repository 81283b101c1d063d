package server

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestClusterConfigDefaults: Kafka 2.8's defaults of the cluster-mode
// properties, and broker.id -1 (generated) when zookeeper.connect is set and
// no id is given.
func TestClusterConfigDefaults(t *testing.T) {
	c, err := LoadConfig("", []string{"zookeeper.connect=127.0.0.1:2181/strata"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := c.Cluster
	want := ClusterConfig{
		ZookeeperConnect: "127.0.0.1:2181/strata", ZookeeperSessionTimeoutMs: 18000, ZookeeperConnectionTimeoutMs: -1,
		OffsetsTopicReplicationFactor: 3, MinInsyncReplicas: 1,
		ReplicaLagTimeMaxMs: 30000, ReplicaFetchMaxBytes: 1 << 20, ReplicaFetchResponseMaxBytes: 10 << 20,
		ReplicaFetchWaitMaxMs: 500, ReplicaFetchMinBytes: 1, ReplicaFetchBackoffMs: 1000, ReplicaSocketTimeoutMs: 30000,
		ReplicaSocketReceiveBufferBytes: -1,
		NumReplicaFetchers:              1, ReplicaHWCheckpointIntervalMs: 5000,
		ReplicationQuotaWindowNum: 11, ReplicationQuotaWindowSizeSec: 1,
		ControlledShutdownEnable: true, ControlledShutdownMaxRetries: 3, ControlledShutdownRetryBackoffMs: 5000,
		AutoLeaderRebalanceEnable: true, LeaderImbalancePerBrokerPercentage: 10, LeaderImbalanceCheckIntervalSeconds: 300,
		ControllerSocketTimeoutMs:   30000,
		ListenerSecurityProtocolMap: map[string]string{"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL"},
	}
	if !reflect.DeepEqual(cc, want) {
		t.Fatalf("got  %+v\nwant %+v", cc, want)
	}
	if c.NodeID != -1 || c.DefaultReplication != 1 || c.interBrokerListener() != "PLAINTEXT" || !cc.Enabled() {
		t.Fatalf("node.id %d, default.replication.factor %d, inter-broker listener %s", c.NodeID, c.DefaultReplication, c.interBrokerListener())
	}
	if cc.zkConnectionTimeout() != 18*time.Second {
		t.Fatalf("connection timeout %v", cc.zkConnectionTimeout())
	}
	// Without zookeeper.connect the node id stays 0 and nothing is enabled.
	d, err := LoadConfig("", nil, nil)
	if err != nil || d.NodeID != 0 || d.Cluster.Enabled() {
		t.Fatalf("single node: %v %d %v", err, d.NodeID, d.Cluster.Enabled())
	}
}

// TestClusterConfigListeners: several named listeners, each mapped to a
// protocol; advertised listeners per name; the inter-broker listener.
func TestClusterConfigListeners(t *testing.T) {
	c, err := LoadConfig("", []string{
		"zookeeper.connect=zk:2181", "broker.id=2",
		"listeners=internal://127.0.0.1:9093,EXTERNAL://0.0.0.0:9092",
		"advertised.listeners=INTERNAL://b2.internal:9093,EXTERNAL://b2.example:19092",
		"listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
		"inter.broker.listener.name=internal",
		"broker.rack=r1", "zookeeper.connection.timeout.ms=2500", "min.insync.replicas=2",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 2 || c.Listeners[0] != (Listener{"INTERNAL", "127.0.0.1", 9093}) || c.Listeners[1].Name != "EXTERNAL" ||
		c.interBrokerListener() != "INTERNAL" || c.advertisedListeners()[1] != (Listener{"EXTERNAL", "b2.example", 19092}) ||
		c.Cluster.BrokerRack != "r1" || c.Cluster.zkConnectionTimeout() != 2500*time.Millisecond || c.Cluster.MinInsyncReplicas != 2 {
		t.Fatalf("%+v", c)
	}
	if v, _ := brokerValue(c, "listener.security.protocol.map"); v != "EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT" {
		t.Fatalf("described map %q", v)
	}
}

// TestClusterConfigRefused: Kafka's checks, each with a message naming the
// property.
func TestClusterConfigRefused(t *testing.T) {
	zk := "zookeeper.connect=zk:2181"
	for _, tc := range []struct {
		props []string
		want  string
	}{
		{[]string{"listeners=PLAINTEXT://a:1,PLAINTEXT://a:2"}, "more than once"},
		{[]string{"listeners=SSL://h:1"}, "needs ssl.keystore.location"},
		{[]string{"listeners=INTERNAL://h:1"}, "not in listener.security.protocol.map"},
		{[]string{"listeners=IN://h:1", "listener.security.protocol.map=IN:SASL_PLAINTEXT"}, "GSSAPI is not supported"},
		// inter-broker SASL: the broker's own mechanism must be enabled and
		// its JAAS config must give its username and password
		{[]string{zk, "listeners=IN://h:1", "listener.security.protocol.map=IN:SASL_PLAINTEXT", "inter.broker.listener.name=IN", "sasl.enabled.mechanisms=PLAIN",
			"sasl.jaas.config=" + `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`}, "sasl.mechanism.inter.broker.protocol GSSAPI must be included"},
		{[]string{zk, "listeners=IN://h:1", "listener.security.protocol.map=IN:SASL_PLAINTEXT", "inter.broker.listener.name=IN", "sasl.enabled.mechanisms=PLAIN",
			"sasl.mechanism.inter.broker.protocol=PLAIN",
			"sasl.jaas.config=" + `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`}, "needs the broker's own username and password"},
		{[]string{zk, "listeners=SASL_PLAINTEXT://h:1", "security.inter.broker.protocol=SASL_PLAINTEXT", "sasl.enabled.mechanisms=SCRAM-SHA-512",
			"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256"}, "SCRAM-SHA-256 must be included in sasl.enabled.mechanisms (SCRAM-SHA-512)"},
		{[]string{zk, "listeners=SASL_PLAINTEXT://h:1", "security.inter.broker.protocol=SASL_PLAINTEXT", "inter.broker.listener.name=SASL_PLAINTEXT"}, "only one of"},
		{[]string{zk, "security.inter.broker.protocol=TLS"}, "security.inter.broker.protocol"},
		{[]string{"listener.security.protocol.map=A:B"}, "unknown security protocol"},
		{[]string{"listener.security.protocol.map=A:PLAINTEXT,a:SSL"}, "more than once"},
		{[]string{"advertised.listeners=OTHER://h:1", "listener.security.protocol.map=OTHER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}, "names no listener"},
		{[]string{"default.replication.factor=3"}, "single node"},
		{[]string{"broker.id=-1"}, "needs zookeeper.connect"},
		{[]string{"node.id=-2"}, "at least -1"},
		{[]string{zk, "default.replication.factor=0"}, "default.replication.factor"},
		{[]string{zk, "listeners=IN://h:1", "listener.security.protocol.map=IN:PLAINTEXT"}, "inter.broker.listener.name PLAINTEXT"},
		{[]string{zk, "inter.broker.listener.name=OTHER"}, "inter.broker.listener.name OTHER"},
		{[]string{zk, "replica.fetch.wait.max.ms=40000"}, "replica.socket.timeout.ms"},
		{[]string{zk, "replica.lag.time.max.ms=100"}, "replica.lag.time.max.ms"},
		{[]string{zk, "broker.id=1001"}, "reserved.broker.max.id"},
		{[]string{"zookeeper.connect=zk:2181/bad/"}, "zookeeper.connect"},
		{[]string{"zookeeper.connect=zk:99999"}, "zookeeper.connect"},
		{[]string{"offsets.topic.replication.factor=0"}, "offsets.topic.replication.factor"},
		{[]string{"min.insync.replicas=0"}, "min.insync.replicas"},
		{[]string{"num.replica.fetchers=0"}, "num.replica.fetchers"},
		{[]string{"replica.socket.receive.buffer.bytes=-2"}, "replica.socket.receive.buffer.bytes"},
		{[]string{"zookeeper.session.timeout.ms=0"}, "zookeeper.session.timeout.ms"},
		{[]string{"unclean.leader.election.enable=maybe"}, "unclean.leader.election.enable"},
	} {
		_, err := LoadConfig("", tc.props, nil)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an ErrConfig mentioning %q", tc.props, err, tc.want)
		}
	}
}

// TestTopicConfigMinISR: min.insync.replicas and
// unclean.leader.election.enable are applied topic configs with their broker
// synonyms, so DescribeConfigs reports the broker default and an override.
func TestTopicConfigMinISR(t *testing.T) {
	base, err := LoadConfig("", []string{"min.insync.replicas=2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	eff, applied, err := topicConfig(base, map[string]string{"unclean.leader.election.enable": "true"}, strictAll, testLogger())
	if err != nil || eff.Cluster.MinInsyncReplicas != 2 || !eff.Cluster.UncleanLeaderElectionEnable || !applied["unclean.leader.election.enable"] {
		t.Fatalf("%v %+v %v", err, eff.Cluster, applied)
	}
	eff, _, err = topicConfig(base, map[string]string{"min.insync.replicas": "3"}, strictAll, testLogger())
	if err != nil || eff.Cluster.MinInsyncReplicas != 3 {
		t.Fatalf("%v %d", err, eff.Cluster.MinInsyncReplicas)
	}
	if _, _, err := topicConfig(base, map[string]string{"min.insync.replicas": "0"}, strictAll, testLogger()); !errors.Is(err, ErrConfig) {
		t.Fatalf("min.insync.replicas=0: %v", err)
	}
	d := topicConfigDef("min.insync.replicas")
	if d == nil || !d.applied() || brokerDefault(base, d) != "2" {
		t.Fatalf("min.insync.replicas def %+v", d)
	}
}
