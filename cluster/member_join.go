package cluster

import (
	"errors"
	"fmt"
	"time"
)

// What a broker does in ZooKeeper before it serves (Kafka's
// KafkaServer.startup and KafkaZkClient): the persistent paths, the cluster
// id, a generated broker id, the registration. Each function retries
// ErrConnectionLoss until its deadline, as Kafka's
// retryRequestUntilConnected does.

// EnsurePersistentPaths creates the persistent znodes of PersistentPaths that
// are missing (Kafka's createTopLevelPaths).
func EnsurePersistentPaths(zk ZK, deadline time.Time) error {
	for _, p := range PersistentPaths {
		err := retryLoss(deadline, func() error {
			_, err := zk.Create(p, nil, Persistent)
			if errors.Is(err, ErrNodeExists) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("cluster: creating %s: %w", p, err)
		}
	}
	return nil
}

// EnsureClusterID returns the id in /cluster/id, creating it with a new
// random id (Kafka's Uuid as 22 base64url characters) when the cluster has
// none (Kafka's getOrGenerateClusterId).
func EnsureClusterID(zk ZK, deadline time.Time) (string, error) {
	var id string
	err := retryLoss(deadline, func() error {
		for {
			data, _, err := zk.Get(ClusterIDPath)
			if err == nil {
				id, err = DecodeClusterID(data)
				return err
			}
			if !errors.Is(err, ErrNoNode) {
				return err
			}
			u, err := NewUUID(nil)
			if err != nil {
				return err
			}
			if _, err := zk.Create(ClusterPath, nil, Persistent); err != nil && !errors.Is(err, ErrNodeExists) {
				return err
			}
			_, err = zk.Create(ClusterIDPath, EncodeClusterID(UUIDString(u)), Persistent)
			if err == nil {
				id = UUIDString(u)
				return nil
			}
			if !errors.Is(err, ErrNodeExists) {
				return err
			}
			// another broker made it first: read its id
		}
	})
	if err != nil {
		return "", fmt.Errorf("cluster: reading %s: %w", ClusterIDPath, err)
	}
	return id, nil
}

// GenerateBrokerID is broker.id=-1's id: an unconditional write of
// /brokers/seqid (created when missing) whose new version plus
// reservedMax (reserved.broker.max.id) is the id (Kafka's
// generateBrokerSequenceId). A write whose answer was lost is retried, so
// an id may be skipped, never handed out twice.
func GenerateBrokerID(zk ZK, reservedMax int32, deadline time.Time) (int32, error) {
	var id int32
	err := retryLoss(deadline, func() error {
		st, err := zk.Set(BrokerSeqIDPath, nil, -1)
		if errors.Is(err, ErrNoNode) {
			for _, p := range []string{BrokersPath, BrokerSeqIDPath} {
				if _, err := zk.Create(p, nil, Persistent); err != nil && !errors.Is(err, ErrNodeExists) {
					return err
				}
			}
			st, err = zk.Set(BrokerSeqIDPath, nil, -1)
		}
		if err != nil {
			return err
		}
		id = GeneratedBrokerID(st.Version, reservedMax)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cluster: generating a broker id from %s: %w", BrokerSeqIDPath, err)
	}
	return id, nil
}

// registerBroker creates /brokers/ids/N (ephemeral) and returns its czxid,
// the broker epoch. An existing znode is ours only when our session owns
// it (a create whose answer was lost); else ErrBrokerIDTaken (Kafka's
// checkedEphemeralCreate). session is the owning session.
func registerBroker(zk ZK, id int32, data []byte, deadline time.Time) (epoch, session int64, err error) {
	p := BrokerPath(id)
	err = retryLoss(deadline, func() error {
		_, err := zk.Create(p, data, Ephemeral)
		if err != nil && !errors.Is(err, ErrNodeExists) {
			return err
		}
		_, st, gerr := zk.Get(p)
		switch {
		case errors.Is(gerr, ErrNoNode):
			return ErrConnectionLoss // gone again (its session just ended): create once more
		case gerr != nil:
			return gerr
		case st.EphemeralOwner != zk.SessionID() || st.EphemeralOwner == 0:
			return fmt.Errorf("%w: broker.id %d is already registered by another broker (%s owned by session 0x%x, ours is 0x%x)",
				ErrBrokerIDTaken, id, p, st.EphemeralOwner, zk.SessionID())
		}
		epoch, session = st.Czxid, st.EphemeralOwner
		return nil
	})
	return epoch, session, err
}

// retryLoss runs f again while it fails with ErrConnectionLoss, backing
// off from 50 ms to 1 s, until deadline.
func retryLoss(deadline time.Time, f func() error) error {
	backoff := 50 * time.Millisecond
	for {
		err := f()
		if err == nil || !errors.Is(err, ErrConnectionLoss) {
			return err
		}
		if time.Now().Add(backoff).After(deadline) {
			return err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}
