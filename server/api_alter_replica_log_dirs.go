package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleAlterReplicaLogDirs answers AlterReplicaLogDirs (key 34, v0-2) as
// Kafka's ReplicaManager.alterReplicaLogDirs: for each partition named
// under a dir, a move of this broker's replica to that log dir
// (logdir_move.go). Per partition: LOG_DIR_NOT_FOUND when the dir is not
// one of log.dirs (nor an absolute path), KAFKA_STORAGE_ERROR when it or
// the replica's current dir is offline, REPLICA_NOT_AVAILABLE when the
// broker has no replica of the partition (the dir is remembered: the
// replica is created there), success when the move started or the
// replica is already there. A partition named twice keeps the last dir.
// The ACL gate (Alter on the cluster) answers CLUSTER_AUTHORIZATION_FAILED
// for every partition.
func (s *Server) handleAlterReplicaLogDirs(req *kmsg.AlterReplicaLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	type key struct {
		topic string
		part  int32
	}
	dirOf := map[key]string{}
	var order []key
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				k := key{t.Topic, p}
				if _, seen := dirOf[k]; !seen {
					order = append(order, k)
				}
				dirOf[k] = d.Dir
			}
		}
	}
	for _, k := range order {
		code := s.alterReplicaLogDir(k.topic, k.part, dirOf[k])
		addAlterLogDirsResult(resp, k.topic, k.part, code)
	}
	return resp
}

// alterReplicaLogDir moves one replica: the error code.
func (s *Server) alterReplicaLogDir(topic string, part int32, dir string) int16 {
	if s.cl != nil {
		return s.cl.alterReplicaLogDir(topic, part, dir)
	}
	if validateTopicName(topic) != nil {
		return kerr.InvalidTopicException.Code
	}
	return s.topics.alterLogDir(topic, part, dir)
}

// addAlterLogDirsResult appends one partition's result, grouped by topic.
func addAlterLogDirsResult(resp *kmsg.AlterReplicaLogDirsResponse, topic string, part int32, code int16) {
	i := len(resp.Topics) - 1
	if i < 0 || resp.Topics[i].Topic != topic {
		rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
		rt.Topic = topic
		resp.Topics = append(resp.Topics, rt)
		i++
	}
	rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
	rp.Partition, rp.ErrorCode = part, code
	resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
}

// denyAlterReplicaLogDirs is the gate's answer without Alter on the
// cluster: CLUSTER_AUTHORIZATION_FAILED for every partition.
func denyAlterReplicaLogDirs(req *kmsg.AlterReplicaLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				addAlterLogDirsResult(resp, t.Topic, p, kerr.ClusterAuthorizationFailed.Code)
			}
		}
	}
	return resp
}
