package server

import (
	"context"
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// handleMetadataCluster answers Metadata v0-11 in cluster mode from the
// metadata cache: every live broker with its endpoint on the listener the
// request came in on, the controller, and per partition the leader, leader
// epoch, replicas, ISR and offline replicas (LEADER_NOT_AVAILABLE while a
// partition has no live leader). Unknown topics are created through
// ZooKeeper when auto.create.topics.enable allows (num.partitions,
// default.replication.factor) and answer LEADER_NOT_AVAILABLE until the
// controller has elected their leaders, as Kafka's; __consumer_offsets is
// created with its own settings.
func (s *Server) handleMetadataCluster(c *conn, req *kmsg.MetadataRequest) kmsg.Response {
	cl := s.cl
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Default()
	im := cl.images.load()
	v := im.view(c.listener)
	if v == nil {
		v = &metadataView{}
	}
	resp.Brokers = v.brokers
	resp.ClusterID = &cl.clusterID
	resp.ControllerID = im.controllerID
	resp.AuthorizedOperations = math.MinInt32
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		resp.Topics = v.all
		return resp
	}
	autoCreate := s.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
		}
		if mt := v.topics[name]; mt != nil {
			resp.Topics = append(resp.Topics, *mt)
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		n := name
		mt.Topic = &n
		mt.IsInternal = name == OffsetsTopic
		switch {
		case validateTopicName(name) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		case !autoCreate:
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			mt.ErrorCode = cl.autoCreate(name)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

// autoCreate creates a topic Metadata asked for and returns the code to
// answer: LEADER_NOT_AVAILABLE once it exists (its leaders are being
// elected), or why it could not be created.
func (cl *clusterNode) autoCreate(name string) int16 {
	var err error
	if name == OffsetsTopic {
		err = cl.ensureOffsetsTopic()
	} else {
		err = cl.createTopic(context.Background(), name, cl.cfg.NumPartitions, cl.cfg.DefaultReplication, nil, nil, false)
	}
	switch {
	case err == nil, errors.Is(err, cluster.ErrTopicExists):
		return kerr.LeaderNotAvailable.Code
	case errors.Is(err, errNotEnoughBrokers):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, cluster.ErrInvalidReplicationFactor), errors.Is(err, cluster.ErrInvalidPartitions):
		return cluster.ErrorCode(err)
	}
	cl.log.Error("auto-creating topic", "topic", name, "error", err)
	return kerr.UnknownServerError.Code
}

// handleFindCoordinatorCluster answers FindCoordinator v0-4 in cluster
// mode: a group's coordinator is the leader of its __consumer_offsets
// partition, named with its endpoint on the request's listener. The offsets
// topic is created on first lookup once offsets.topic.replication.factor
// brokers live; until it exists and the partition has a live leader the
// answer is COORDINATOR_NOT_AVAILABLE (clients retry).
func (s *Server) handleFindCoordinatorCluster(c *conn, r *kmsg.FindCoordinatorRequest) kmsg.Response {
	cl := s.cl
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	lookup := func(key string) (int32, string, int32, int16, string) {
		switch {
		case r.CoordinatorType == 1:
			return cl.findTxnCoordinator(c, key)
		case r.CoordinatorType != 0:
			return -1, "", -1, kerr.InvalidRequest.Code, "unknown coordinator key type"
		case key == "":
			return -1, "", -1, kerr.InvalidRequest.Code, "empty group id"
		}
		if err := cl.ensureOffsetsTopic(); err != nil {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, err.Error()
		}
		im := cl.images.load()
		p := offsetsPartition(key, int32(len(s.groups.loading)))
		mp, ok := im.partition(OffsetsTopic, p)
		if !ok {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the offsets topic's partitions are being created"
		}
		b, ok := im.broker(mp.leader)
		if !ok {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the group's offsets partition has no live leader"
		}
		e, ok := b.endpoint(c.listener)
		if !ok {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, "the coordinator has no endpoint on listener " + c.listener
		}
		return b.id, e.Host, e.Port, 0, ""
	}
	if r.Version >= 4 {
		for _, key := range r.CoordinatorKeys {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key = key
			id, host, port, code, msg := lookup(key)
			co.NodeID, co.Host, co.Port, co.ErrorCode = id, host, port, code
			if code != 0 {
				co.ErrorMessage = &msg
			}
			resp.Coordinators = append(resp.Coordinators, co)
		}
		return resp
	}
	id, host, port, code, msg := lookup(r.CoordinatorKey)
	resp.NodeID, resp.Host, resp.Port, resp.ErrorCode = id, host, port, code
	if code != 0 {
		resp.ErrorMessage = &msg
	}
	return resp
}
