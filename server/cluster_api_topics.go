package server

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// Topic administration in cluster mode, as Kafka's ZooKeeper mode: only the
// controller takes CreateTopics, DeleteTopics and CreatePartitions (others
// answer NOT_CONTROLLER and clients send them to the controller Metadata
// names); the controller writes the znodes (cluster_admin.go) and waits,
// up to the request's timeout_ms, until its metadata cache shows the
// result: every partition led, or the topic gone (REQUEST_TIMED_OUT
// otherwise, the change going on in the background).

// waitImage waits until cond holds for the metadata cache, or until
// timeout; it reports whether cond held.
func (cl *clusterNode) waitImage(timeout time.Duration, cond func(*metadataImage) bool) bool {
	ctx, cancel := context.WithTimeout(cl.ctx, timeout)
	defer cancel()
	for {
		ch := cl.images.wait()
		if cond(cl.images.load()) {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return cond(cl.images.load())
		}
	}
}

// notController answers every item of a request to a broker that is not
// the controller.
func (cl *clusterNode) notController() (int16, string) {
	return kerr.NotController.Code, "this broker is not the controller: send it to the controller Metadata names"
}

// handleCreateTopicsCluster answers CreateTopics v0-7 on the controller:
// replica placement over the live brokers (rack-aware when every broker
// has broker.rack), replication_factor -1 being default.replication.factor
// and num_partitions -1 num.partitions (v4+), or explicit assignments;
// INVALID_REPLICATION_FACTOR when fewer brokers live than the factor.
func (s *Server) handleCreateTopicsCluster(req *kmsg.CreateTopicsRequest) kmsg.Response {
	cl := s.cl
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.Default()
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	var created []int
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		n, rf, code, msg := cl.createTopicItem(req, &rt, seen[rt.Topic] > 1)
		st.ErrorCode = code
		if code != 0 && req.Version >= 1 && msg != "" {
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		if code == 0 {
			st.NumPartitions, st.ReplicationFactor = n, rf
			st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
			if req.Version >= 5 {
				st.Configs = s.createdTopicConfigs(rt.Configs)
			}
			if !req.ValidateOnly {
				created = append(created, len(resp.Topics))
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(created) == 0 {
		return resp
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	cl.waitImage(timeout, func(im *metadataImage) bool {
		for _, i := range created {
			if ok, _ := im.led(resp.Topics[i].Topic); !ok {
				return false
			}
		}
		return true
	})
	im := cl.images.load()
	for _, i := range created {
		st := &resp.Topics[i]
		if t := im.topics[st.Topic]; t != nil {
			st.TopicID = t.id
		}
		if ok, _ := im.led(st.Topic); !ok && req.TimeoutMillis > 0 {
			st.ErrorCode = kerr.RequestTimedOut.Code
			if req.Version >= 1 {
				st.ErrorMessage = kmsg.StringPtr("the topic is created; its partitions had no leaders yet within timeout_ms")
			}
		}
	}
	return resp
}

func (cl *clusterNode) createTopicItem(req *kmsg.CreateTopicsRequest, rt *kmsg.CreateTopicsRequestTopic, dup bool) (int32, int16, int16, string) {
	if !cl.mem.IsController() {
		code, msg := cl.notController()
		return 0, 0, code, msg
	}
	switch {
	case dup:
		return 0, 0, kerr.InvalidRequest.Code, "topic named more than once in the request"
	case validateTopicName(rt.Topic) != nil:
		return 0, 0, kerr.InvalidTopicException.Code, validateTopicName(rt.Topic).Error()
	}
	n, rf := rt.NumPartitions, rt.ReplicationFactor
	var assignment [][]int32
	if len(rt.ReplicaAssignment) > 0 {
		if n != -1 || rf != -1 {
			return 0, 0, kerr.InvalidRequest.Code, "both a replica assignment and partitions/replication factor"
		}
		assignment = make([][]int32, len(rt.ReplicaAssignment))
		for _, a := range rt.ReplicaAssignment {
			if a.Partition < 0 || int(a.Partition) >= len(assignment) || assignment[a.Partition] != nil {
				return 0, 0, kerr.InvalidReplicaAssignment.Code, "partitions of the assignment must be 0 to n-1, each once"
			}
			assignment[a.Partition] = a.Replicas
		}
		n, rf = int32(len(assignment)), int16(len(assignment[0]))
	} else {
		if n == -1 && req.Version >= 4 {
			n = cl.cfg.NumPartitions
		}
		if rf == -1 && req.Version >= 4 {
			rf = cl.cfg.DefaultReplication
		}
		if n <= 0 {
			return 0, 0, kerr.InvalidPartitions.Code, "number of partitions must be positive"
		}
		if rf <= 0 {
			return 0, 0, kerr.InvalidReplicationFactor.Code, "replication factor must be positive"
		}
	}
	if code, msg := cl.s.checkPartitionCount(n); code != 0 {
		return 0, 0, code, msg
	}
	var configs map[string]string
	for _, c := range rt.Configs {
		if configs == nil {
			configs = map[string]string{}
		}
		if c.Value == nil {
			return 0, 0, kerr.InvalidConfig.Code, "null value for config " + c.Name
		}
		configs[c.Name] = *c.Value
	}
	err := cl.createTopic(cl.ctx, rt.Topic, n, rf, assignment, configs, req.ValidateOnly)
	if code, msg := adminErrorCode(cl, "creating topic", rt.Topic, err); code != 0 {
		return 0, 0, code, msg
	}
	return n, rf, 0, ""
}

// adminErrorCode maps the errors of the ZooKeeper admin writes.
func adminErrorCode(cl *clusterNode, what, topic string, err error) (int16, string) {
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, errPartitionCount):
		return kerr.InvalidPartitions.Code, err.Error()
	case errors.Is(err, ErrConfig):
		return kerr.InvalidConfig.Code, err.Error()
	case errors.Is(err, ErrInvalidTopic):
		return kerr.InvalidTopicException.Code, err.Error()
	case cluster.ErrorCode(err) > 0:
		return cluster.ErrorCode(err), err.Error()
	}
	cl.log.Error(what, "topic", topic, "error", err)
	return kerr.UnknownServerError.Code, what + " failed: " + err.Error()
}

// handleDeleteTopicsCluster answers DeleteTopics v0-6 on the controller:
// /admin/delete_topics/T is created and the answer waits until the
// metadata cache no longer holds the topic (or timeout_ms:
// REQUEST_TIMED_OUT, the deletion going on).
func (s *Server) handleDeleteTopicsCluster(req *kmsg.DeleteTopicsRequest) kmsg.Response {
	cl := s.cl
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	resp.Default()
	items := deleteTopicsItems(req)
	var deleting []int
	im := cl.images.load()
	for _, it := range items {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = it.name, it.id
		code, msg := func() (int16, string) {
			switch {
			case !cl.mem.IsController():
				return cl.notController()
			case it.name != nil && it.id != ([16]byte{}):
				return kerr.InvalidRequest.Code, "a topic may be named by name or by id, not both"
			case !s.cfg.DeleteTopicEnable && req.Version < 3:
				return kerr.InvalidRequest.Code, "topic deletion is disabled (delete.topic.enable=false)"
			case !s.cfg.DeleteTopicEnable:
				return kerr.TopicDeletionDisabled.Code, "topic deletion is disabled (delete.topic.enable=false)"
			}
			name := ""
			if it.name != nil {
				name = *it.name
			} else {
				n, ok := im.byID[it.id]
				if !ok {
					return kerr.UnknownTopicID.Code, "unknown topic id " + uuidString(it.id)
				}
				name = n
				st.Topic = &n
			}
			if name == OffsetsTopic {
				return kerr.InvalidRequest.Code, "the internal topic " + OffsetsTopic + " holds the groups' committed offsets and cannot be deleted"
			}
			return adminErrorCode(cl, "deleting topic", name, cl.markForDeletion(name))
		}()
		st.ErrorCode = code
		if code != 0 && req.Version >= 5 && msg != "" {
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		if code == 0 {
			deleting = append(deleting, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(deleting) == 0 {
		return resp
	}
	gone := func(im *metadataImage) bool {
		for _, i := range deleting {
			if _, ok := im.topics[*resp.Topics[i].Topic]; ok {
				return false
			}
		}
		return true
	}
	if !cl.waitImage(time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond, gone) {
		im := cl.images.load()
		for _, i := range deleting {
			if _, ok := im.topics[*resp.Topics[i].Topic]; ok {
				resp.Topics[i].ErrorCode = kerr.RequestTimedOut.Code
			}
		}
	}
	return resp
}

// handleCreatePartitionsCluster answers CreatePartitions v0-3 on the
// controller: the new partitions continue partition 0's placement (or
// follow the explicit assignment), the assignment znode is rewritten, and
// the answer waits until they are led (or timeout_ms).
func (s *Server) handleCreatePartitionsCluster(req *kmsg.CreatePartitionsRequest) kmsg.Response {
	cl := s.cl
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	resp.Default()
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	var grown []int
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		code, msg := func() (int16, string) {
			switch {
			case !cl.mem.IsController():
				return cl.notController()
			case seen[rt.Topic] > 1:
				return kerr.InvalidRequest.Code, "topic named more than once in the request"
			case rt.Topic == OffsetsTopic:
				return kerr.InvalidRequest.Code, "the partition count of the internal topic " + OffsetsTopic + " cannot change"
			}
			if code, msg := s.checkPartitionCount(rt.Count); code != 0 {
				return code, msg
			}
			var assignment [][]int32
			for _, a := range rt.Assignment {
				assignment = append(assignment, a.Replicas)
			}
			if rt.Assignment != nil && assignment == nil {
				assignment = [][]int32{}
			}
			return adminErrorCode(cl, "creating partitions", rt.Topic, cl.addPartitions(rt.Topic, rt.Count, assignment, req.ValidateOnly))
		}()
		st.ErrorCode = code
		if code != 0 && msg != "" {
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		if code == 0 && !req.ValidateOnly {
			grown = append(grown, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(grown) == 0 {
		return resp
	}
	done := func(im *metadataImage) bool {
		for _, i := range grown {
			ok, n := im.led(resp.Topics[i].Topic)
			if !ok || int32(n) < req.Topics[i].Count {
				return false
			}
		}
		return true
	}
	if !cl.waitImage(time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond, done) && req.TimeoutMillis > 0 {
		im := cl.images.load()
		for _, i := range grown {
			if ok, n := im.led(resp.Topics[i].Topic); !ok || int32(n) < req.Topics[i].Count {
				resp.Topics[i].ErrorCode = kerr.RequestTimedOut.Code
			}
		}
	}
	return resp
}
