package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/coordinator/txn"
	"github.com/stratalog/strata/internal/kwire"
	"github.com/stratalog/strata/replica"
)

// The transaction coordinator in a cluster (Kafka's TransactionCoordinator
// in ZooKeeper mode): a transactional id belongs to the __transaction_state
// partition abs(hash(id)) % partitions, whose leader coordinates it at
// coordinator epoch = the partition's leader epoch. Becoming its leader
// loads the partition (COORDINATOR_LOAD_IN_PROGRESS meanwhile) and
// completes the transactions it finds prepared; losing it drops them. The
// coordinator's records go through the partition as leader with acks=-1;
// markers go to each partition's leader: appended here when it is this
// broker, else in a WriteTxnMarkers request on the inter-broker listener.

// txnLeadershipChanged follows the leadership of __transaction_state
// partitions after a LeaderAndIsr or StopReplica naming them.
func (cl *clusterNode) txnLeadershipChanged(parts []int32) {
	tc := cl.s.txns
	if tc == nil {
		return
	}
	owned := tc.c.Owned()
	for _, p := range parts {
		rp := cl.rm.Partition(TxnStateTopic, p)
		if rp == nil || rp.Role() != replica.RoleLeader || !cl.online(rp) {
			tc.c.Resign(p, -1)
			continue
		}
		epoch := rp.LeaderEpoch()
		if e, ok := owned[p]; ok && e == epoch {
			continue
		}
		l := rp.Log()
		part := &partition{topic: TxnStateTopic, index: p, dir: l.Dir(), log: l}
		cl.s.bgWG.Add(1)
		go func() {
			defer cl.s.bgWG.Done()
			start := time.Now()
			if err := tc.c.Load(p, epoch, readerOf(part)); err != nil {
				cl.log.Warn("loading transaction state", "partition", p, "leader_epoch", epoch, "error", err)
				return
			}
			cl.log.Info("transaction state partition loaded", "partition", p, "leader_epoch", epoch, "took", time.Since(start))
		}()
	}
}

// txnPartitionCount is __transaction_state's partition count: ZooKeeper's
// when the topic exists, else transaction.state.log.num.partitions.
func (cl *clusterNode) txnPartitionCount() int32 {
	a, _, err := cl.readAssignment(TxnStateTopic)
	switch {
	case err == nil && len(a.Partitions) > 0:
		return int32(len(a.Partitions))
	case err != nil && !errors.Is(err, cluster.ErrUnknownTopic):
		cl.log.Warn("reading the transaction state topic's assignment; using transaction.state.log.num.partitions", "error", err)
	}
	return cl.cfg.TxnStateNumPartitions
}

// ensureTxnTopic creates __transaction_state through ZooKeeper when it
// does not exist (transaction.state.log.replication.factor replicas,
// min.insync.replicas transaction.state.log.min.isr, compacted), once
// enough brokers live.
func (cl *clusterNode) ensureTxnTopic() error {
	if _, ok := cl.images.load().topics[TxnStateTopic]; ok {
		return nil
	}
	tc := cl.s.txns
	tc.topicMu.Lock()
	defer tc.topicMu.Unlock()
	rf := cl.cfg.TxnStateReplicationFactor
	if live := len(cl.images.load().brokers); live < int(rf) {
		return fmt.Errorf("%w: %d live brokers do not meet the replication factor %d of the transaction state topic (transaction.state.log.replication.factor)",
			errNotEnoughBrokers, live, rf)
	}
	err := cl.createTopic(context.Background(), TxnStateTopic, tc.c.NumPartitions(), rf, nil, tc.topicConfigs(), false)
	if err != nil && !errors.Is(err, cluster.ErrTopicExists) {
		return err
	}
	return nil
}

// findTxnCoordinator is FindCoordinator's answer for transactional id key:
// the leader of its __transaction_state partition.
func (cl *clusterNode) findTxnCoordinator(c *conn, key string) (int32, string, int32, int16, string) {
	if key == "" {
		return -1, "", -1, kerr.InvalidRequest.Code, "empty transactional id"
	}
	if err := cl.ensureTxnTopic(); err != nil {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, err.Error()
	}
	im := cl.images.load()
	mp, ok := im.partition(TxnStateTopic, cl.s.txns.c.PartitionFor(key))
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the transaction state topic's partitions are being created"
	}
	b, ok := im.broker(mp.leader)
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the transactional id's partition has no live leader"
	}
	e, ok := b.endpoint(c.listener)
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the coordinator has no endpoint on listener " + c.listener
	}
	return b.id, e.Host, e.Port, 0, ""
}

// appendTxnState is the Store's append in a cluster.
func (cl *clusterNode) appendTxnState(p, epoch int32, batch []byte) error {
	switch code := cl.appendInternal(TxnStateTopic, p, epoch, batch); code {
	case 0:
		return nil
	case kerr.NotCoordinator.Code:
		return fmt.Errorf("%w: %s-%d at leader epoch %d", txn.ErrNotOwned, TxnStateTopic, p, epoch)
	default:
		return kerr.ErrorForCode(code)
	}
}

// writeMarkers sends m to each partition's leader: local ones appended
// here, the others grouped per leader into one WriteTxnMarkers request.
func (cl *clusterNode) writeMarkers(ctx context.Context, m txn.Markers) error {
	im := cl.images.load()
	remote := map[int32][]txn.Partition{}
	for _, tp := range m.Partitions {
		mp, ok := im.partition(tp.Topic, tp.Partition)
		if !ok {
			if _, exists := im.topics[tp.Topic]; !exists {
				continue // deleted: nothing to end
			}
			return fmt.Errorf("marker to %s-%d: %w", tp.Topic, tp.Partition, kerr.UnknownTopicOrPartition)
		}
		if mp.leader == cl.id {
			if code := cl.s.writeTxnMarker(m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch, tp.Topic, tp.Partition); code != 0 {
				return fmt.Errorf("marker to %s-%d: %w", tp.Topic, tp.Partition, kerr.ErrorForCode(code))
			}
			continue
		}
		remote[mp.leader] = append(remote[mp.leader], tp)
	}
	for leader, tps := range remote {
		if err := cl.sendMarkers(ctx, leader, m, tps); err != nil {
			return err
		}
	}
	return nil
}

// sendMarkers sends one WriteTxnMarkers request to broker leader.
func (cl *clusterNode) sendMarkers(ctx context.Context, leader int32, m txn.Markers, tps []txn.Partition) error {
	addr, ok := cl.brokerAddr(leader)
	if !ok {
		return fmt.Errorf("marker to broker %d: no address", leader)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cl.cfg.Cluster.ControllerSocketTimeoutMs)*time.Millisecond)
	defer cancel()
	c, err := kwire.Dial(ctx, addr, kwire.Options{ClientID: "broker-" + strconv.Itoa(int(cl.id)) + "-txn-markers", Security: cl.security})
	if err != nil {
		return err
	}
	defer c.Close()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	for i := 0; i < len(tps); {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic = tps[i].Topic
		for ; i < len(tps) && tps[i].Topic == t.Topic; i++ {
			t.Partitions = append(t.Partitions, tps[i].Partition)
		}
		mk.Topics = append(mk.Topics, t)
	}
	req.Markers = append(req.Markers, mk)
	resp, err := c.Request(ctx, req)
	if err != nil {
		return err
	}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return fmt.Errorf("marker to %s-%d on broker %d: %w", rt.Topic, rp.Partition, leader, kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		}
	}
	return nil
}

// appendMarker appends a control batch to a partition this broker leads,
// acks=-1, as Kafka's WriteTxnMarkers handler does.
func (cl *clusterNode) appendMarker(batch []byte, topic string, p int32) int16 {
	if _, ok := cl.images.load().partition(topic, p); !ok {
		if _, exists := cl.images.load().topics[topic]; !exists {
			return 0
		}
	}
	switch code := cl.appendInternal(topic, p, -1, batch); code {
	case kerr.NotCoordinator.Code:
		return kerr.NotLeaderForPartition.Code
	case kerr.CoordinatorNotAvailable.Code:
		return kerr.NotEnoughReplicas.Code
	default:
		return code
	}
}
