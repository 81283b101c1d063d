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
