package cluster

import "errors"

// ZooKeeper outcomes every ZK implementation returns (wrapped with %w).
var (
	ErrNoNode         = errors.New("cluster: znode does not exist")
	ErrNodeExists     = errors.New("cluster: znode already exists")
	ErrBadVersion     = errors.New("cluster: znode version mismatch")
	ErrNotEmpty       = errors.New("cluster: znode has children")
	ErrSessionExpired = errors.New("cluster: zookeeper session expired")
	ErrConnectionLoss = errors.New("cluster: zookeeper connection lost (outcome unknown)")
	ErrRolledBack     = errors.New("cluster: multi op rolled back")
	ErrClosed         = errors.New("cluster: zookeeper client closed")
)

// ErrBadZnode marks znode data that does not decode (malformed JSON, a missing
// or mistyped field, an out-of-range value); the error names the znode.
var ErrBadZnode = errors.New("cluster: malformed znode data")

// More ZooKeeper outcomes.
var (
	// ErrBadRequest: ZooKeeper refused the request as such (an invalid path,
	// a child under an ephemeral znode, bad arguments, no permission);
	// retrying will not help.
	ErrBadRequest = errors.New("cluster: zookeeper refused the request")
	// ErrNoSession: no ZooKeeper session was established within
	// zookeeper.connection.timeout.ms.
	ErrNoSession = errors.New("cluster: no zookeeper session")
	// ErrBadConnect: zookeeper.connect is not host:port[,host:port...][/chroot].
	ErrBadConnect = errors.New("cluster: bad zookeeper.connect")
)

// Placement and controller refusals; ErrorCode maps them to Kafka's codes.
var (
	ErrInvalidPartitions        = errors.New("cluster: invalid number of partitions")
	ErrInvalidReplicationFactor = errors.New("cluster: invalid replication factor")
	ErrInvalidReplicaAssignment = errors.New("cluster: invalid replica assignment")
	ErrNotController            = errors.New("cluster: this broker is not the controller")
	// ErrMalformedZnode is ErrBadZnode (one sentinel, two names).
	ErrMalformedZnode = ErrBadZnode
)

// Member refusals.
var (
	// ErrBrokerIDTaken: /brokers/ids/N belongs to another session (another
	// broker runs with this broker.id).
	ErrBrokerIDTaken = errors.New("cluster: broker id is already registered by another broker")
	// ErrMemberClosed: the Member was closed.
	ErrMemberClosed = errors.New("cluster: member closed")
)

// Admin refusals (admin.go), Kafka's AdminZkClient exceptions.
var (
	ErrTopicExists  = errors.New("cluster: topic already exists")
	ErrUnknownTopic = errors.New("cluster: unknown topic")
	ErrInvalidTopic = errors.New("cluster: invalid topic")
)

// ErrorCode is the Kafka error code for err: INVALID_PARTITIONS,
// INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, NOT_CONTROLLER,
// TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION,
// or UNKNOWN_SERVER_ERROR (-1) for anything else; 0 for nil.
func ErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrTopicExists):
		return 36
	case errors.Is(err, ErrUnknownTopic):
		return 3
	case errors.Is(err, ErrInvalidTopic):
		return 17
	case errors.Is(err, ErrInvalidPartitions):
		return 37
	case errors.Is(err, ErrInvalidReplicationFactor):
		return 38
	case errors.Is(err, ErrInvalidReplicaAssignment):
		return 39
	case errors.Is(err, ErrNotController):
		return 41
	}
	return -1
}
