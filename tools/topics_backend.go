package tools

import (
	"context"
	"encoding/base64"
	"fmt"
)

// topicsBackend is where strata topics reads and changes topics: a broker
// over the Kafka protocol (--bootstrap-server, topics_admin.go) or ZooKeeper
// itself (--zookeeper, Kafka 2.x's way, topics_zk.go). The actions (topics_*.go) only see this interface and the
// values below, so both backends print the same way.
//
// Errors: a refusal by the cluster wraps the *kerr.Error Kafka would answer
// with (a ZooKeeper backend too: TOPIC_ALREADY_EXISTS for an existing
// /brokers/topics/T, INVALID_REPLICATION_FACTOR for too few live brokers,
// ...), so that it exits 1 and --if-not-exists recognises it; anything else
// (unreachable, timeout, unsupported) exits 2. clusterErr makes that split.
type topicsBackend interface {
	// list returns every topic, internal ones included, sorted by name.
	list(ctx context.Context) ([]topicListing, error)
	// describe returns the named topics (each with its partitions, configs
	// and reassignments in progress) and the live brokers. A topic that
	// cannot be described carries its error in topicView.err.
	describe(ctx context.Context, names []string) (*clusterView, error)
	// create creates one topic; a refusal is a *topicErr.
	create(ctx context.Context, t newTopic) (createdTopic, error)
	// addPartitions grows each topic to its total partition count; a nil
	// assignment lets the cluster place the new replicas. The result holds
	// one entry per topic: nil or its *topicErr.
	addPartitions(ctx context.Context, grow []partitionGrowth) (map[string]error, error)
	// delete deletes the topics; the result holds one entry per topic: nil
	// or its *topicErr.
	delete(ctx context.Context, names []string) (map[string]error, error)
	close()
}

// topicListing is one topic of list.
type topicListing struct {
	name     string
	internal bool
	// markedForDeletion: a deletion is pending (ZooKeeper's
	// /admin/delete_topics/T; a broker never reports it).
	markedForDeletion bool
}

// clusterView is what describe saw.
type clusterView struct {
	liveBrokers map[int32]bool
	topics      []topicView // sorted by name
}

// topicView is one described topic.
type topicView struct {
	name              string
	id                [16]byte // all zero: the cluster has no topic ids
	internal          bool
	markedForDeletion bool
	partitions        []partitionView // sorted by partition
	// configs are the topic's configs as the cluster describes them; an
	// entry with isDefault is the built-in default and not printed.
	configs []configEntry
	err     error // the topic could not be described
}

// configEntry is one config of a topic.
type configEntry struct {
	name      string
	value     string
	isDefault bool // Kafka's ConfigEntry.isDefault: source DEFAULT_CONFIG
}

// partitionView is one partition of a described topic.
type partitionView struct {
	partition    int32
	leader       int32 // -1: none
	leaderEpoch  int32
	replicas     []int32
	isr          []int32
	offline      []int32
	reassignment *reassignment // nil: none in progress (or the cluster cannot say)
	err          error         // the partition's error in the cluster's answer (e.g. LEADER_NOT_AVAILABLE)
}

// reassignment is a partition reassignment in progress (Kafka's
// PartitionReassignment): the full target replica list and the replicas
// being added and removed.
type reassignment struct {
	replicas []int32
	adding   []int32
	removing []int32
}

// newTopic is one --create.
type newTopic struct {
	name              string
	partitions        int32     // -1: the cluster's default
	replicationFactor int16     // -1: the cluster's default
	assignment        [][]int32 // --replica-assignment: partition i's replicas; then partitions and replicationFactor are -1
	configs           map[string]string
}

// createdTopic is what the cluster said of a created topic; zero values
// where it did not say (older protocol versions).
type createdTopic struct {
	id                [16]byte
	partitions        int32
	replicationFactor int16
}

// partitionGrowth is one topic of --alter --partitions.
type partitionGrowth struct {
	topic      string
	total      int32
	assignment [][]int32 // replicas of each new partition, or nil
}

// topicErr is the cluster's refusal of one topic: Kafka's error (a
// *kerr.Error) and the broker's message, if it sent one.
type topicErr struct {
	err error
	msg string
}

func (e *topicErr) Error() string {
	if e.msg == "" {
		return e.err.Error()
	}
	return fmt.Sprintf("%v (%s)", e.err, e.msg)
}

func (e *topicErr) Unwrap() error { return e.err }

// topicIDString is a topic id as Kafka prints it (Uuid.toString: URL-safe
// base64 without padding, 22 characters); "" for the zero id.
func topicIDString(id [16]byte) string {
	if id == [16]byte{} {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// internalTopics are the topics Kafka's Topic.isInternal names.
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true}
