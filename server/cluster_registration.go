package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// registration is the stand-in member until package cluster's Member lands:
// Kafka's persistent paths, /cluster/id, and the ephemeral /brokers/ids/N
// (its czxid the broker epoch). It never becomes the controller: the
// controller's request entry points answer NOT_CONTROLLER.
type registration struct {
	zk    cluster.ZK
	epoch int64
}

func startRegistration(c memberConfig) (clusterMember, error) {
	if err := ensurePersistentPaths(c.zk); err != nil {
		return nil, err
	}
	id, err := getOrCreateClusterID(c.zk)
	if err != nil {
		return nil, err
	}
	if c.checkClusterID != nil {
		if err := c.checkClusterID(id); err != nil {
			return nil, err
		}
	}
	reg := cluster.BrokerRegistration{ID: c.brokerID, Endpoints: c.endpoints, Rack: c.rack, JMXPort: -1, Timestamp: time.Now().UnixMilli()}
	path := cluster.BrokerPath(c.brokerID)
	if _, err := c.zk.Create(path, reg.Encode(), cluster.Ephemeral); err != nil {
		if errors.Is(err, cluster.ErrNodeExists) {
			if _, st, gerr := c.zk.Get(path); gerr != nil || st.EphemeralOwner != c.zk.SessionID() {
				return nil, fmt.Errorf("%w: broker.id %d is already registered by another broker", ErrCluster, c.brokerID)
			}
		} else {
			return nil, fmt.Errorf("%w: registering %s: %w", ErrCluster, path, err)
		}
	}
	_, st, err := c.zk.Get(path)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrCluster, path, err)
	}
	return &registration{zk: c.zk, epoch: st.Czxid}, nil
}

func (r *registration) BrokerEpoch() int64  { return r.epoch }
func (r *registration) ControllerID() int32 { return -1 }
func (r *registration) IsController() bool  { return false }
func (r *registration) Close()              { r.zk.Close() }

func (r *registration) AlterPartition(_ context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	resp.ErrorCode = kerr.NotController.Code
	return resp, nil
}

func (r *registration) ControlledShutdown(_ context.Context, req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error) {
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	resp.ErrorCode = kerr.NotController.Code
	return resp, nil
}

func (r *registration) ElectLeaders(_ context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = kerr.NotController.Code
	return resp, nil
}

// ensurePersistentPaths creates Kafka's persistent znodes when missing.
func ensurePersistentPaths(zk cluster.ZK) error {
	for _, p := range append([]string{cluster.ClusterPath}, cluster.PersistentPaths...) {
		if _, err := zk.Create(p, nil, cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
			return fmt.Errorf("%w: creating %s: %w", ErrCluster, p, err)
		}
	}
	return nil
}

// getOrCreateClusterID reads /cluster/id, creating it with a new id when
// missing (Kafka's getOrGenerateClusterId).
func getOrCreateClusterID(zk cluster.ZK) (string, error) {
	for {
		data, _, err := zk.Get(cluster.ClusterIDPath)
		if err == nil {
			return cluster.DecodeClusterID(data)
		}
		if !errors.Is(err, cluster.ErrNoNode) {
			return "", fmt.Errorf("%w: reading %s: %w", ErrCluster, cluster.ClusterIDPath, err)
		}
		u, err := cluster.NewUUID(rand.Reader)
		if err != nil {
			return "", err
		}
		if _, err := zk.Create(cluster.ClusterIDPath, cluster.EncodeClusterID(cluster.UUIDString(u)), cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
			return "", fmt.Errorf("%w: creating %s: %w", ErrCluster, cluster.ClusterIDPath, err)
		}
	}
}
