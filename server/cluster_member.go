package server

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// clusterMember is what the broker needs of its life in ZooKeeper (package
// cluster's Member): the registration's broker epoch, whether this broker
// is the controller, and the controller's request entry points, which block
// for the controller's answer (NOT_CONTROLLER at once on other brokers).
type clusterMember interface {
	BrokerEpoch() int64
	ControllerID() int32
	IsController() bool
	AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
	ControlledShutdown(ctx context.Context, req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error)
	ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error)
	// Close ends the membership: the ZooKeeper session closes, so the
	// registration (and /controller, when held) go at once.
	Close()
}

// memberConfig is what the server hands the member at start.
type memberConfig struct {
	zk        cluster.ZK
	brokerID  int32
	endpoints []cluster.Endpoint
	rack      string
	// checkClusterID refuses another cluster's id (meta.properties).
	checkClusterID func(id string) error
	// Callbacks (on the member's goroutines).
	onControllerChange  func(id int32)
	onReregistered      func(epoch int64)
	onTopicConfigChange func(topics []string)
}

// joinCluster starts the broker's membership; replaced by package cluster's
// Member once it lands (registration only until then).
var joinCluster = startRegistration
