package server

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error)
	ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error)
	// ReportLogDirFailure tells the controller a log dir of this broker
	// failed (a /log_dir_event_notification znode).
	ReportLogDirFailure()
	// Close ends the membership: the ZooKeeper session closes, so the
	// registration (and /controller, when held) go at once.
	Close()
}

// startMember starts the broker's membership with package cluster's
// Member: Kafka's persistent paths, /cluster/id (refused when the log dirs
// belong to another cluster), the ephemeral /brokers/ids/N, the controller
// election and, while elected, the controller with the broker's settings,
// and the config change listener.
func (cl *clusterNode) startMember() (clusterMember, error) {
	cc := &cl.cfg.Cluster
	m, err := cluster.StartMember(cluster.MemberConfig{
		ZK:        cl.zk,
		BrokerID:  cl.id,
		Endpoints: cl.endpoints(),
		Rack:      cc.BrokerRack,
		Controller: &cluster.ControllerOptions{
			UncleanLeaderElectionEnable:        cc.UncleanLeaderElectionEnable,
			DeleteTopicEnable:                  cl.cfg.DeleteTopicEnable,
			LeaderImbalancePerBrokerPercentage: int(cc.LeaderImbalancePerBrokerPercentage),
			InterBrokerListener:                cl.cfg.interBrokerListener(),
			OnElection:                         cl.s.onElection,
			OnElectionTime:                     cl.s.onElectionTime,
		},
		ControllerSocketTimeout:      time.Duration(cc.ControllerSocketTimeoutMs) * time.Millisecond,
		AutoLeaderRebalanceEnable:    cc.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval: time.Duration(cc.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		StartTimeout:                 cc.zkConnectionTimeout(),
		CheckClusterID:               cl.adoptClusterID,
		OnControllerChange:           func(int32) { cl.controllerChanged() },
		OnReregistered:               cl.reregistered,
		OnTopicConfigChange:          cl.topicConfigsChanged,
		OnEntityConfigChange:         cl.s.quotas.entitiesChanged,
		OnBrokerConfigChange:         cl.brokerConfigsChanged,
		Logger:                       cl.log.With("component", "cluster"),
		Security:                     cl.security,
	})
	if err != nil {
		if errors.Is(err, ErrInconsistentClusterID) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrCluster, err)
	}
	return m, nil
}
