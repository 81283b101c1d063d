package sim

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/replica"
)

// metaCache is a broker's metadata cache (Kafka's MetadataCache in ZooKeeper
// mode): what the controller's UpdateMetadata said about partitions, live
// brokers and the controller. Clients' Metadata requests are answered from
// it; a broker finds the controller for AlterPartition in it.
type metaCache struct {
	controllerEpoch int32
	controller      int32
	live            []int32
	parts           map[replica.TopicPartition]partMeta
}

// partMeta is one partition as the metadata says.
type partMeta struct {
	Leader, LeaderEpoch int32
	ISR, Replicas       []int32
}

func newMetaCache() *metaCache {
	return &metaCache{controllerEpoch: -1, controller: -1, parts: map[replica.TopicPartition]partMeta{}}
}

// update applies UpdateMetadata: a request for an earlier registration of
// this broker (KIP-380, as replica.Manager checks LeaderAndIsr) or from a
// stale controller epoch is refused whole; the live brokers are replaced,
// each partition listed replaced (removed for a topic being deleted).
func (c *metaCache) update(req *kmsg.UpdateMetadataRequest, brokerEpoch int64) *kmsg.UpdateMetadataResponse {
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	if req.BrokerEpoch >= 0 && (brokerEpoch <= 0 || req.BrokerEpoch < brokerEpoch) {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	if req.ControllerEpoch < c.controllerEpoch {
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		return resp
	}
	c.controllerEpoch, c.controller = req.ControllerEpoch, req.ControllerID
	c.live = c.live[:0]
	for _, b := range req.LiveBrokers {
		c.live = append(c.live, b.ID)
	}
	slices.Sort(c.live)
	for _, t := range req.TopicStates {
		for _, p := range t.PartitionStates {
			tp := replica.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if p.Leader == cluster.LeaderDuringDelete {
				delete(c.parts, tp)
				continue
			}
			c.parts[tp] = partMeta{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: slices.Clone(p.ISR), Replicas: slices.Clone(p.Replicas)}
		}
	}
	return resp
}

// metadataResp is a Metadata answer: the controller and the partitions the
// broker knows (a copy).
type metadataResp struct {
	controller int32
	parts      map[replica.TopicPartition]partMeta
}

func (c *metaCache) answer() metadataResp {
	r := metadataResp{controller: c.controller, parts: make(map[replica.TopicPartition]partMeta, len(c.parts))}
	for tp, p := range c.parts {
		r.parts[tp] = p
	}
	return r
}
