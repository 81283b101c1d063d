package server

import (
	"errors"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/replica"
)

// handleLeaderAndIsr answers LeaderAndIsr v0-5 (cluster mode): the
// controller tells this broker which partitions it leads and follows
// (Kafka's ReplicaManager.becomeLeaderOrFollower). Fencing first (kafka-
// zookeeper.md section 5): a request older than this broker's registration
// is STALE_BROKER_EPOCH, one from a controller epoch below the highest seen
// STALE_CONTROLLER_EPOCH, both logged and ignored. Then the topics' ids and
// configs are taken in (partition.metadata; segment options for new logs),
// a partition whose recovered directory holds another topic id answers
// INCONSISTENT_TOPIC_ID, and the replica Manager applies the rest (per
// partition: a leader epoch not newer is STALE_CONTROLLER_EPOCH, a partition
// not assigned here UNKNOWN_TOPIC_OR_PARTITION, a log that cannot be opened
// KAFKA_STORAGE_ERROR). Offsets partitions this broker now leads load their
// groups; those it no longer leads unload them.
func (s *Server) handleLeaderAndIsr(req *kmsg.LeaderAndISRRequest) kmsg.Response {
	cl := s.cl
	cl.stateChangeMu.Lock()
	defer cl.stateChangeMu.Unlock()
	if code := cl.checkControlRequest("LeaderAndIsr", req.ControllerID, req.ControllerEpoch, req.BrokerEpoch); code != 0 {
		resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
		resp.ErrorCode = code
		return resp
	}
	cl.checkedControl(req)
	cl.takeTopics(req)
	cl.refreshThrottles(req)
	refused := cl.refusePartitions(req)
	resp := cl.rm.LeaderAndIsr(req, time.Now().UnixMilli())
	for _, r := range refused {
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Topic, rp.Partition, rp.ErrorCode = r.topic, r.partition, r.code
		if req.Version < 5 {
			resp.Partitions = append(resp.Partitions, rp)
			continue
		}
		id := cl.topicID(r.topic)
		i := slices.IndexFunc(resp.Topics, func(t kmsg.LeaderAndISRResponseTopic) bool { return t.TopicID == id })
		if i < 0 {
			t := kmsg.NewLeaderAndISRResponseTopic()
			t.TopicID = id
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	if resp.ErrorCode == 0 {
		cl.afterLeaderAndIsr(req)
	}
	cl.appendedAsLeader() // parked fetches see the new roles at once
	return resp
}

// checkControlRequest fences a controller request (LeaderAndIsr,
// UpdateMetadata, StopReplica): STALE_BROKER_EPOCH when it was meant for an
// older registration of this broker (broker epoch -1: an old version, not
// checked), STALE_CONTROLLER_EPOCH when its controller epoch is below the
// highest this broker has seen; otherwise the epoch is recorded.
func (cl *clusterNode) checkControlRequest(api string, controllerID, controllerEpoch int32, brokerEpoch int64) int16 {
	if cur := cl.mem.BrokerEpoch(); brokerEpoch >= 0 && brokerEpoch < cur {
		cl.log.Warn("ignoring a controller request for an older registration of this broker", "api", api,
			"controller", controllerID, "broker_epoch", brokerEpoch, "current", cur)
		return kerr.StaleBrokerEpoch.Code
	}
	for {
		cur := cl.ctrlEpoch.Load()
		if controllerEpoch < cur {
			cl.log.Warn("ignoring a request from a stale controller", "api", api, "controller", controllerID,
				"controller_epoch", controllerEpoch, "latest", cur)
			return kerr.StaleControllerEpoch.Code
		}
		if controllerEpoch == cur || cl.ctrlEpoch.CompareAndSwap(cur, controllerEpoch) {
			return 0
		}
	}
}

// checkedControl runs the test hook between a control request's check and
// its apply.
func (cl *clusterNode) checkedControl(req kmsg.Request) {
	if h := cl.afterControlCheck.Load(); h != nil {
		(*h)(req)
	}
}

// takeTopics records the request's topic ids and reads the configs of
// topics new to this broker, before the Manager opens their logs (so no
// ZooKeeper read happens under the Manager's lock).
func (cl *clusterNode) takeTopics(req *kmsg.LeaderAndISRRequest) {
	var fresh []string
	cl.cfgMu.Lock()
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		if ts.TopicID != ([16]byte{}) {
			cl.topicIDs[ts.Topic] = ts.TopicID
		}
		if cl.topicCfg[ts.Topic] == nil {
			fresh = append(fresh, ts.Topic)
		}
	}
	for i := range req.PartitionStates {
		if t := req.PartitionStates[i].Topic; cl.topicCfg[t] == nil {
			fresh = append(fresh, t)
		}
	}
	cl.cfgMu.Unlock()
	for _, t := range fresh {
		if cl.cachedTopicConfig(t) == nil {
			cl.loadTopicConfig(t)
		}
	}
}

func (cl *clusterNode) topicID(topic string) [16]byte {
	cl.cfgMu.Lock()
	defer cl.cfgMu.Unlock()
	return cl.topicIDs[topic]
}

// refusedPartition is a partition of a LeaderAndIsr answered before the
// replica Manager sees it.
type refusedPartition struct {
	topic     string
	partition int32
	code      int16
}

// refusePartitions takes out of req the partitions this broker answers
// itself, as Kafka's becomeLeaderOrFollower does before the epoch checks:
// KAFKA_STORAGE_ERROR for a partition whose log lives in an offline log
// dir (the controller then elects another leader and takes this broker
// out of the ISR until it restarts), INCONSISTENT_TOPIC_ID for a partition
// not hosted yet whose recovered directory's partition.metadata names
// another topic id (a topic of the same name deleted while this broker was
// away; the directory is left alone).
func (cl *clusterNode) refusePartitions(req *kmsg.LeaderAndISRRequest) []refusedPartition {
	var out []refusedPartition
	check := func(topic string, id [16]byte, ps *kmsg.LeaderAndISRRequestTopicPartition) bool {
		tp := replica.TopicPartition{Topic: topic, Partition: ps.Partition}
		if p := cl.rm.Partition(topic, ps.Partition); p != nil {
			if dd := cl.s.topics.dataDirOf(filepath.Dir(p.Log().Dir())); dd != nil && dd.Err() != nil {
				out = append(out, refusedPartition{topic, ps.Partition, kerr.KafkaStorageError.Code})
				return false
			}
			return true
		}
		l, dd := cl.s.topics.recoveredLog(tp)
		switch {
		case l == nil:
		case dd.Err() != nil:
			out = append(out, refusedPartition{topic, ps.Partition, kerr.KafkaStorageError.Code})
			return false
		case id != ([16]byte{}):
			if err := checkPartitionMetadata(cl.s.topics.fs, l.Dir(), id); errors.Is(err, errInconsistentTopicID) {
				cl.log.Error("partition directory of another topic id: not served", "topic", topic, "partition", ps.Partition, "error", err)
				out = append(out, refusedPartition{topic, ps.Partition, kerr.InconsistentTopicID.Code})
				return false
			}
		}
		return true
	}
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		ts.PartitionStates = slices.DeleteFunc(ts.PartitionStates, func(ps kmsg.LeaderAndISRRequestTopicPartition) bool {
			return !check(ts.Topic, ts.TopicID, &ps)
		})
	}
	req.PartitionStates = slices.DeleteFunc(req.PartitionStates, func(ps kmsg.LeaderAndISRRequestTopicPartition) bool {
		return !check(ps.Topic, [16]byte{}, &ps)
	})
	return out
}

// afterLeaderAndIsr moves the group coordinator's offsets partitions with
// their leadership and, after the first request, names the strays.
func (cl *clusterNode) afterLeaderAndIsr(req *kmsg.LeaderAndISRRequest) {
	var offsets, txns []int32
	for i := range req.TopicStates {
		if ts := &req.TopicStates[i]; ts.Topic == OffsetsTopic || ts.Topic == TxnStateTopic {
			for _, ps := range ts.PartitionStates {
				if ts.Topic == OffsetsTopic {
					offsets = append(offsets, ps.Partition)
				} else {
					txns = append(txns, ps.Partition)
				}
			}
		}
	}
	for i := range req.PartitionStates {
		if ps := &req.PartitionStates[i]; ps.Topic == OffsetsTopic {
			offsets = append(offsets, ps.Partition)
		} else if ps.Topic == TxnStateTopic {
			txns = append(txns, ps.Partition)
		}
	}
	if len(offsets) > 0 {
		cl.offsetsLeadershipChanged(offsets)
	}
	if len(txns) > 0 {
		cl.txnLeadershipChanged(txns)
	}
	if !cl.sawLeaderAndIsr.Swap(true) {
		cl.logStrays()
		cl.resumeMoves()
	}
}
