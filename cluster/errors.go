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
