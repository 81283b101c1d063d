package server

import (
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/recovery"
)

// alterReplicaLogDir is AlterReplicaLogDirs for one partition in cluster
// mode. A replica this broker does not host yet gets the dir remembered
// (openLog creates it there: reassignment with log_dirs lands in the
// dir); a replica already in the dir is a success.
func (cl *clusterNode) alterReplicaLogDir(topic string, part int32, dir string) int16 {
	ts := cl.s.topics
	if validateTopicName(topic) != nil {
		return kerr.InvalidTopicException.Code
	}
	if !filepath.IsAbs(dir) {
		return kerr.LogDirNotFound.Code
	}
	target := ts.configuredDataDir(dir)
	if target == nil {
		return kerr.LogDirNotFound.Code
	}
	if target.Err() != nil {
		return kerr.KafkaStorageError.Code
	}
	rp := cl.rm.Partition(topic, part)
	if rp == nil {
		ts.moves.mu.Lock()
		ts.moves.preferred[recovery.TopicPartition{Topic: topic, Partition: part}] = target.Dir()
		ts.moves.mu.Unlock()
		return kerr.ReplicaNotAvailable.Code
	}
	cur := ts.dataDirOf(filepath.Dir(rp.Log().Dir()))
	if cur.Err() != nil {
		return kerr.KafkaStorageError.Code
	}
	if cur == target {
		return 0
	}
	return kerr.KafkaStorageError.Code
}

// dirForNewReplica is the log dir a new replica of tp goes to: the one
// AlterReplicaLogDirs named for it when online, else the emptiest online
// one (nil: every log dir is offline).
func (cl *clusterNode) dirForNewReplica(tp recovery.TopicPartition) *recovery.DataDir {
	ts := cl.s.topics
	ts.moves.mu.Lock()
	d, ok := ts.moves.preferred[tp]
	delete(ts.moves.preferred, tp)
	ts.moves.mu.Unlock()
	if ok {
		if dd := ts.configuredDataDir(d); dd != nil && dd.Err() == nil {
			return dd
		}
	}
	return cl.emptiestOnlineDir()
}
