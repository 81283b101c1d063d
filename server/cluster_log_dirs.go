package server

import (
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// alterReplicaLogDir is AlterReplicaLogDirs for one partition in cluster
// mode. A replica this broker does not host yet gets the dir remembered
// (openLog creates it there: reassignment with log_dirs lands in the
// dir); a replica already in the dir is a success; another is copied to
// the dir and swapped in as on a single node (logdir_move.go), whether it
// leads or follows.
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
	if !cl.online(rp) {
		return kerr.KafkaStorageError.Code
	}
	return ts.alterHostedLogDir(&replicaHost{cl: cl, rp: rp}, recovery.TopicPartition{Topic: topic, Partition: part}, target)
}

// replicaHost is a cluster replica a move copies from and swaps into
// (replica.Partition.SwapLog: under its role lock, the leader-epoch
// checkpoint moved with it).
type replicaHost struct {
	cl *clusterNode
	rp *replica.Partition
}

func (h *replicaHost) current() *segment.Log { return h.rp.Log() }

func (h *replicaHost) swap(mv *logMove, fn func(cur *segment.Log) (*segment.Log, error)) error {
	return h.rp.SwapLog(mv.futureDir, fn)
}

func (h *replicaHost) swapped(nl *segment.Log) {
	tp := h.rp.TopicPartition()
	h.cl.registerCleaner(h.cl.topicConfig(tp.Topic), tp, nl)
}

// resumeMoves runs after the first LeaderAndIsr: a -future directory of a
// replica this broker hosts in another log dir resumes its move; the
// others are removed (the partition is gone from this broker).
func (cl *clusterNode) resumeMoves() {
	cl.s.topics.resumeFutureDirs(cl.log, func(tp recovery.TopicPartition, dd *recovery.DataDir) moveHost {
		rp := cl.rm.Partition(tp.Topic, tp.Partition)
		if rp == nil || filepath.Dir(rp.Log().Dir()) == dd.Dir() {
			return nil
		}
		return &replicaHost{cl: cl, rp: rp}
	})
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
