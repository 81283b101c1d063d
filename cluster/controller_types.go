package cluster

import "slices"

// Endpoint is one advertised listener of a broker registration.
type Endpoint struct {
	Listener         string // listener name, e.g. "PLAINTEXT"
	Host             string
	Port             int32
	SecurityProtocol int16 // Kafka's id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL
}

// Broker is a registered broker as the controller knows it: the content of
// /brokers/ids/N and the znode's czxid, its broker epoch (KIP-380).
type Broker struct {
	ID        int32
	Epoch     int64
	Endpoints []Endpoint
	Rack      string // broker.rack, "" when unset
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PartitionState is a partition state znode
// (/brokers/topics/T/partitions/P/state) and its version.
type PartitionState struct {
	Leader          int32 // -1: no leader
	LeaderEpoch     int32
	ISR             []int32
	ControllerEpoch int32 // epoch of the controller that wrote it
	Version         int32 // the znode's version: the partition epoch (zkVersion); not in the JSON
	// LeaderRecoveryState is KIP-704's: LeaderRecovering (1) after an
	// unclean election until the leader has recovered; written only when
	// not LeaderRecovered (0).
	LeaderRecoveryState int8
}

// NoLeader is the leader of a partition without one; LeaderDuringDelete is
// the leader UpdateMetadata announces for a topic being deleted.
const (
	NoLeader           int32 = -1
	LeaderDuringDelete int32 = -2
	epochDuringDelete  int32 = -2
)

// UncleanLeaderElectionConfig is the topic config (and broker default)
// that lets a replica outside the ISR lead.
const UncleanLeaderElectionConfig = "unclean.leader.election.enable"

// Topic is a topic as ZooKeeper holds it: /brokers/topics/T and
// /config/topics/T.
type Topic struct {
	Name     string
	ID       [16]byte  // topic_id; zero when the znode has none (the controller then writes one)
	Replicas [][]int32 // Replicas[p]: partition p's replicas, preferred leader first
	Version  int32     // version of /brokers/topics/T
	// Configs are the overrides of /config/topics/T; nil when that znode
	// does not exist (an empty map when it exists without overrides).
	Configs map[string]string
}

// TopicSnapshot is a topic with what the loader found beneath it.
type TopicSnapshot struct {
	Topic
	// States[p] is partition p's state znode, nil when it has none.
	States []*PartitionState
	// PartitionNodes[p] tells whether /brokers/topics/T/partitions/p exists.
	PartitionNodes []bool
	// PartitionsNode tells whether /brokers/topics/T/partitions exists.
	PartitionsNode bool
	// Adding and Removing are the reassignments in progress
	// (adding_replicas and removing_replicas of /brokers/topics/T).
	Adding, Removing map[int32][]int32
	// ExtraNodes are znodes under /brokers/topics/T/partitions for
	// partitions beyond the assignment, children before parents; the
	// deletion of the topic removes them too.
	ExtraNodes []string
}

// Snapshot is what a controller activates with: the ZooKeeper state it
// takes over, read by LoadSnapshot.
type Snapshot struct {
	ControllerID    int32 // brokerid of /controller
	ControllerEpoch int32 // content of /controller_epoch
	EpochVersion    int32 // version of /controller_epoch: every write is fenced on it
	Brokers         []Broker
	Topics          []TopicSnapshot
	DeleteTopics    []string // children of /admin/delete_topics
	LogDirEvents    []string // children of /log_dir_event_notification (deleted at activation)
	// Reassign is /admin/reassign_partitions (Exists false when absent).
	Reassign ReassignZnode
	// Skipped says what the loader left out (malformed znodes), for the log.
	Skipped []string
}

func (b *Broker) equal(o *Broker) bool {
	return b.ID == o.ID && b.Epoch == o.Epoch && b.Rack == o.Rack && slices.Equal(b.Endpoints, o.Endpoints)
}

func (s *PartitionState) clone() PartitionState {
	c := *s
	c.ISR = slices.Clone(s.ISR)
	return c
}
