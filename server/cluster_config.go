package server

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/replica"
)

// ClusterConfig holds the broker properties of cluster mode (Kafka 2.8's
// ZooKeeper mode). They sit in the one config table (configdefs.go) with
// the others; without zookeeper.connect they are checked and described but
// change nothing: the broker is a single node.
type ClusterConfig struct {
	ZookeeperConnect             string // zookeeper.connect: host:port[,host:port...][/chroot]; set = cluster mode
	ZookeeperSessionTimeoutMs    int32  // zookeeper.session.timeout.ms (default 18000)
	ZookeeperConnectionTimeoutMs int32  // zookeeper.connection.timeout.ms (default -1: the session timeout)
	BrokerRack                   string // broker.rack ("" when unset)

	OffsetsTopicReplicationFactor int16 // offsets.topic.replication.factor (default 3)
	MinInsyncReplicas             int32 // min.insync.replicas (default 1; topic override)
	UncleanLeaderElectionEnable   bool  // unclean.leader.election.enable (default false; topic override)

	ReplicaLagTimeMaxMs           int64 // replica.lag.time.max.ms (default 30000)
	ReplicaFetchMaxBytes          int32 // replica.fetch.max.bytes (default 1 MiB)
	ReplicaFetchResponseMaxBytes  int32 // replica.fetch.response.max.bytes (default 10 MiB)
	ReplicaFetchWaitMaxMs         int32 // replica.fetch.wait.max.ms (default 500)
	ReplicaFetchMinBytes          int32 // replica.fetch.min.bytes (default 1)
	ReplicaFetchBackoffMs         int32 // replica.fetch.backoff.ms (default 1000)
	ReplicaSocketTimeoutMs        int32 // replica.socket.timeout.ms (default 30000)
	NumReplicaFetchers            int32 // num.replica.fetchers (default 1)
	ReplicaHWCheckpointIntervalMs int64 // replica.high.watermark.checkpoint.interval.ms (default 5000)
	ReplicationQuotaWindowNum     int32 // replication.quota.window.num (default 11)
	ReplicationQuotaWindowSizeSec int32 // replication.quota.window.size.seconds (default 1)

	// ReplicaSocketReceiveBufferBytes is replica.socket.receive.buffer.bytes,
	// the fetchers' SO_RCVBUF (default -1, the OS's autotuning; Kafka's is
	// 65536: see replica.DefaultReplicaSocketReceiveBufferBytes).
	ReplicaSocketReceiveBufferBytes int32

	ControlledShutdownEnable         bool  // controlled.shutdown.enable (default true)
	ControlledShutdownMaxRetries     int32 // controlled.shutdown.max.retries (default 3)
	ControlledShutdownRetryBackoffMs int64 // controlled.shutdown.retry.backoff.ms (default 5000)

	AutoLeaderRebalanceEnable           bool  // auto.leader.rebalance.enable (default true)
	LeaderImbalancePerBrokerPercentage  int32 // leader.imbalance.per.broker.percentage (default 10)
	LeaderImbalanceCheckIntervalSeconds int64 // leader.imbalance.check.interval.seconds (default 300)
	ControllerSocketTimeoutMs           int32 // controller.socket.timeout.ms (default 30000)

	// ListenerSecurityProtocolMap is listener.security.protocol.map:
	// listener name to security protocol (default: each protocol's name to
	// itself).
	ListenerSecurityProtocolMap map[string]string
	// InterBrokerListenerName is inter.broker.listener.name ("" when unset:
	// the listener named after security.inter.broker.protocol, PLAINTEXT).
	InterBrokerListenerName string
	// InterBrokerProtocol is security.inter.broker.protocol ("" when
	// unset): the inter-broker listener is the one of that name.
	InterBrokerProtocol string
}

// Enabled reports cluster mode: zookeeper.connect is set.
func (c *ClusterConfig) Enabled() bool { return c.ZookeeperConnect != "" }

// Kafka 2.8's defaults of the cluster-mode properties.
const (
	defaultListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
	defaultInterBrokerProtocol         = "PLAINTEXT"
)

func defaultClusterConfig() ClusterConfig {
	m, _ := parseProtocolMap(defaultListenerSecurityProtocolMap)
	return ClusterConfig{
		ZookeeperSessionTimeoutMs:    int32(cluster.DefaultZKSessionTimeout / time.Millisecond),
		ZookeeperConnectionTimeoutMs: -1,

		OffsetsTopicReplicationFactor: 3,
		MinInsyncReplicas:             1,

		ReplicaLagTimeMaxMs:           replica.DefaultReplicaLagTimeMaxMs,
		ReplicaFetchMaxBytes:          replica.DefaultReplicaFetchMaxBytes,
		ReplicaFetchResponseMaxBytes:  replica.DefaultReplicaFetchResponseMaxBytes,
		ReplicaFetchWaitMaxMs:         replica.DefaultReplicaFetchWaitMaxMs,
		ReplicaFetchMinBytes:          replica.DefaultReplicaFetchMinBytes,
		ReplicaFetchBackoffMs:         replica.DefaultReplicaFetchBackoffMs,
		ReplicaSocketTimeoutMs:        30000,
		NumReplicaFetchers:            replica.DefaultNumReplicaFetchers,
		ReplicaHWCheckpointIntervalMs: 5000,
		ReplicationQuotaWindowNum:     replica.DefaultQuotaWindowNum,
		ReplicationQuotaWindowSizeSec: replica.DefaultQuotaWindowSizeSeconds,

		ReplicaSocketReceiveBufferBytes: replica.DefaultReplicaSocketReceiveBufferBytes,

		ControlledShutdownEnable:         true,
		ControlledShutdownMaxRetries:     3,
		ControlledShutdownRetryBackoffMs: 5000,

		AutoLeaderRebalanceEnable:           true,
		LeaderImbalancePerBrokerPercentage:  10,
		LeaderImbalanceCheckIntervalSeconds: 300,
		ControllerSocketTimeoutMs:           30000,

		ListenerSecurityProtocolMap: m,
	}
}

// validListenerName accepts Kafka's listener names: letters, digits, '_'
// and '-' (any case; they are upper-cased).
func validListenerName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// parseProtocolMap parses listener.security.protocol.map: NAME:PROTOCOL
// pairs, comma separated; names are upper-cased and distinct, protocols are
// Kafka's four.
func parseProtocolMap(v string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range splitList(v) {
		name, proto, ok := strings.Cut(p, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || !validListenerName(name) {
			return nil, fmt.Errorf("%q: want LISTENER_NAME:PROTOCOL", p)
		}
		if _, known := cluster.ParseSecurityProtocol(proto); !known {
			return nil, fmt.Errorf("%q: unknown security protocol %s (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)", p, proto)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener name %s is mapped more than once", name)
		}
		m[name] = proto
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("empty map")
	}
	return m, nil
}

func showProtocolMap(m map[string]string) string {
	s := make([]string, 0, len(m))
	for k, v := range m {
		s = append(s, k+":"+v)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// upperName is a listener name as Kafka keeps it.
// parseInterBrokerProtocol parses security.inter.broker.protocol.
func parseInterBrokerProtocol(v string) (string, error) {
	switch u := strings.ToUpper(strings.TrimSpace(v)); u {
	case "", protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL:
		return u, nil
	}
	return "", fmt.Errorf("%q: unknown security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)", v)
}

func upperName(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if !validListenerName(v) {
		return "", fmt.Errorf("%q is not a listener name", v)
	}
	return strings.ToUpper(v), nil
}

// checkZKConnect checks zookeeper.connect ("" is single-node mode).
func checkZKConnect(v string) error {
	if v == "" {
		return nil
	}
	_, _, err := cluster.ParseZKConnect(v)
	return err
}

// interBrokerListener is the listener name brokers talk to each other on.
func (c *Config) interBrokerListener() string {
	if c.Cluster.InterBrokerListenerName != "" {
		return c.Cluster.InterBrokerListenerName
	}
	if c.Cluster.InterBrokerProtocol != "" {
		return c.Cluster.InterBrokerProtocol
	}
	return defaultInterBrokerProtocol
}

// advertisedListeners are what the broker tells others to dial:
// advertised.listeners, else listeners (Kafka takes the whole list, not a
// merge per name).
func (c *Config) advertisedListeners() []Listener {
	if len(c.AdvertisedListeners) > 0 {
		return c.AdvertisedListeners
	}
	return c.Listeners
}

// checkClusterConfig is the check across properties of the listeners and of
// cluster mode, Kafka's KafkaConfig requirements: every listener's name is
// in listener.security.protocol.map; advertised listeners name listeners;
// single-node mode serves one replica only; in cluster mode
// inter.broker.listener.name (or security.inter.broker.protocol, not both)
// is an advertised listener, and on a SASL one the broker's own mechanism
// and credentials resolve (interbroker.go),
// replica.fetch.wait.max.ms is at most replica.socket.timeout.ms and
// replica.lag.time.max.ms, and a configured broker.id is at most
// reserved.broker.max.id (1000: ids above are generated).
func checkClusterConfig(c *Config) error {
	cc := &c.Cluster
	for _, l := range append(append([]Listener(nil), c.Listeners...), c.AdvertisedListeners...) {
		if _, ok := cc.ListenerSecurityProtocolMap[l.Name]; !ok {
			return fmt.Errorf("listener %s: name %s is not in listener.security.protocol.map (%s)", l, l.Name, showProtocolMap(cc.ListenerSecurityProtocolMap))
		}
	}
	for _, a := range c.AdvertisedListeners {
		found := false
		for _, l := range c.Listeners {
			found = found || l.Name == a.Name
		}
		if !found {
			return fmt.Errorf("advertised listener %s names no listener in listeners", a)
		}
	}
	if !cc.Enabled() {
		switch {
		case c.DefaultReplication != 1:
			return fmt.Errorf("default.replication.factor %d: a single node (no zookeeper.connect) serves only 1", c.DefaultReplication)
		case c.NodeID < 0:
			return fmt.Errorf("node.id %d: a generated broker id (-1) needs zookeeper.connect", c.NodeID)
		}
		return nil
	}
	ibl := c.interBrokerListener()
	found := false
	for _, l := range c.advertisedListeners() {
		found = found || l.Name == ibl
	}
	switch {
	case !found:
		return fmt.Errorf("inter.broker.listener.name %s must be a listener name in advertised.listeners (or listeners)", ibl)
	case cc.InterBrokerListenerName != "" && cc.InterBrokerProtocol != "":
		return fmt.Errorf("only one of inter.broker.listener.name and security.inter.broker.protocol should be set")
	case cc.ReplicaFetchWaitMaxMs > cc.ReplicaSocketTimeoutMs:
		return fmt.Errorf("replica.socket.timeout.ms %d should always be at least replica.fetch.wait.max.ms %d to prevent unnecessary socket timeouts", cc.ReplicaSocketTimeoutMs, cc.ReplicaFetchWaitMaxMs)
	case int64(cc.ReplicaFetchWaitMaxMs) > cc.ReplicaLagTimeMaxMs:
		return fmt.Errorf("replica.fetch.wait.max.ms %d should always be less than or equal to replica.lag.time.max.ms %d to prevent frequent changes in ISR", cc.ReplicaFetchWaitMaxMs, cc.ReplicaLagTimeMaxMs)
	case c.NodeID > cluster.ReservedBrokerMaxID:
		return fmt.Errorf("broker.id %d must be at most reserved.broker.max.id %d (larger ids are generated)", c.NodeID, cluster.ReservedBrokerMaxID)
	}
	if _, err := interBrokerSASL(c); err != nil {
		return err
	}
	return nil
}

// zkConnectionTimeout is zookeeper.connection.timeout.ms, the session
// timeout when unset.
func (c *ClusterConfig) zkConnectionTimeout() time.Duration {
	if c.ZookeeperConnectionTimeoutMs < 0 {
		return time.Duration(c.ZookeeperSessionTimeoutMs) * time.Millisecond
	}
	return time.Duration(c.ZookeeperConnectionTimeoutMs) * time.Millisecond
}
