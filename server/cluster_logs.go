package server

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// Cluster mode's partition logs. Recovery opens every log dir as on a
// single node (the same DataDirs: checkpoints, clean-shutdown marker,
// cleaner); the replica Manager opens partitions through openLog when a
// LeaderAndIsr names them: a recovered log, else a new partition directory
// in the log dir holding the fewest, with partition.metadata (the topic id
// of the request). A recovered partition no LeaderAndIsr claims is a stray:
// as Kafka 2.x does, it is kept (open, checkpointed, not served) and named
// in the log after the first LeaderAndIsr; the controller deletes it with
// StopReplica if its topic was deleted meanwhile.

// makeLogDirs creates the log dirs.
func (ts *topicStore) makeLogDirs() error {
	for _, dir := range ts.cfg.LogDirs {
		if err := ts.makeLogDir(dir); err != nil {
			return fmt.Errorf("%w: %w", ErrDataDir, err)
		}
	}
	return nil
}

// recoveryOptions are a recovered partition's segment options: its topic's
// configs from ZooKeeper.
func (cl *clusterNode) recoveryOptions(topic string) *segment.Options {
	t := cl.loadTopicConfig(topic)
	o, err := segmentOptions(cl.s.topics.effective(t), cl.log)
	if err != nil {
		return nil
	}
	return o
}

// loadTopicConfig reads a topic's overrides from /config/topics/T and
// caches its effective config. A znode that is missing means no
// overrides; one that cannot be read or decoded is logged and the broker's
// defaults are used (the topic is served, not refused).
func (cl *clusterNode) loadTopicConfig(name string) *topic {
	path := cluster.TopicConfigPath(name)
	var configs map[string]string
	data, _, err := cl.zk.Get(path)
	switch {
	case errors.Is(err, cluster.ErrNoNode):
	case err != nil:
		cl.log.Warn("cannot read topic configs from ZooKeeper: using the broker's", "topic", name, "error", err)
	default:
		if configs, err = cluster.DecodeEntityConfig(path, data); err != nil {
			cl.log.Error("malformed topic configs in ZooKeeper: using the broker's", "topic", name, "error", err)
			configs = nil
		}
	}
	if len(configs) == 0 {
		configs = nil
	}
	t := &topic{name: name, configs: configs}
	_ = cl.s.topics.applyTopicConfigs(t, lenient) // lenient: bad values are logged and skipped
	cl.applyTopicThrottles(t)
	cl.cfgMu.Lock()
	cl.topicCfg[name] = t
	cl.cfgMu.Unlock()
	return t
}

// topicConfig is a topic's cached effective config, read from ZooKeeper on
// first use.
func (cl *clusterNode) topicConfig(name string) *topic {
	cl.cfgMu.Lock()
	t := cl.topicCfg[name]
	cl.cfgMu.Unlock()
	if t != nil {
		return t
	}
	return cl.loadTopicConfig(name)
}

// cachedTopicConfig is a topic's cached config, nil when none is.
func (cl *clusterNode) cachedTopicConfig(name string) *topic {
	cl.cfgMu.Lock()
	defer cl.cfgMu.Unlock()
	return cl.topicCfg[name]
}

// openLog is the replica Manager's LogOpener.
func (cl *clusterNode) openLog(tp replica.TopicPartition, o replica.OpenOptions) (*segment.Log, error) {
	ts := cl.s.topics
	t := cl.topicConfig(tp.Topic)
	opts, err := segmentOptions(ts.effective(t), cl.log)
	if err != nil {
		return nil, err
	}
	cl.cfgMu.Lock()
	id, haveID := cl.topicIDs[tp.Topic]
	cl.cfgMu.Unlock()
	if old, dd := ts.recoveredLog(tp); old != nil {
		l := old
		if o.StartAt >= 0 { // the follower starts over at the leader's log start
			so := *opts
			so.FS, so.Health = ts.fs, dd.Health()
			so.LogStartOffset = o.StartAt
			if l, err = cl.openSegmentLog(old.Dir(), &so); err != nil {
				return nil, err
			}
			if err := dd.AddLog(tp, l); err != nil {
				_ = l.Close()
				return nil, err
			}
		}
		if haveID {
			if err := checkPartitionMetadata(ts.fs, l.Dir(), id); err != nil {
				return nil, err
			}
		}
		cl.registerCleaner(t, tp, l)
		return l, nil
	}
	dd := cl.dirForNewReplica(tp)
	if dd == nil {
		return nil, fmt.Errorf("%w: every log dir is offline", ErrDataDir)
	}
	dir := dd.PartitionDir(tp)
	so := *opts
	so.FS, so.Health = ts.fs, dd.Health() // the log dir's filesystem and fate
	l, err := cl.openSegmentLog(dir, &so)
	if err != nil {
		return nil, err
	}
	if err := dd.AddLog(tp, l); err != nil {
		_ = l.Close()
		return nil, err
	}
	if haveID {
		if err := checkPartitionMetadata(ts.fs, dir, id); err != nil {
			dd.RemoveLog(tp)
			_ = l.Close()
			return nil, err
		}
	}
	cl.registerCleaner(t, tp, l)
	cl.log.Info("partition log created", "topic", tp.Topic, "partition", tp.Partition, "dir", dir)
	return l, nil
}

// openSegmentLog opens a partition directory with the server's opener; in
// cluster mode the log must be a *segment.Log (replication works on it).
func (cl *clusterNode) openSegmentLog(dir string, opts *segment.Options) (*segment.Log, error) {
	pl, err := cl.s.topics.open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrDataDir, dir, err)
	}
	l, ok := pl.(*segment.Log)
	if !ok {
		_ = pl.Close()
		return nil, fmt.Errorf("%w: %s: cluster mode needs segment logs", ErrDataDir, dir)
	}
	return l, nil
}

// errInconsistentTopicID: a partition directory holds another topic's log
// (one of the same name, deleted while this broker was away).
var errInconsistentTopicID = errors.New("server: partition directory of another topic id")

// checkPartitionMetadata checks a partition directory's partition.metadata
// against the topic id, writing it when missing.
func checkPartitionMetadata(fsys vfs.FS, dir string, id [16]byte) error {
	pm := filepath.Join(dir, PartitionMetadataFile)
	if b, err := readFile(fsys, pm); err == nil {
		if got := partitionMetadataID(b); got != uuidString(id) {
			return fmt.Errorf("%w: %s holds topic id %q, the controller says %s", errInconsistentTopicID, pm, got, uuidString(id))
		}
		return nil
	}
	text := "version: 0\ntopic_id: " + uuidString(id) + "\n"
	if err := fsutil.WriteFileAtomic(fsys, pm, []byte(text)); err != nil {
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	return nil
}

// registerCleaner hands a replica's log to the cleaner with its topic's
// config.
func (cl *clusterNode) registerCleaner(t *topic, tp replica.TopicPartition, l *segment.Log) {
	cl.s.topics.registerCleaner(t, &partition{topic: tp.Topic, index: tp.Partition, dir: l.Dir(), log: l})
}

// deleteLog is the replica Manager's LogDeleter (StopReplica with delete):
// the closed log leaves its DataDir and the cleaner, and its directory is
// renamed -delete and removed after file.delete.delay.ms, as on a single
// node; the checkpoints are written at once.
func (cl *clusterNode) deleteLog(tp replica.TopicPartition, l *segment.Log) error {
	ts := cl.s.topics
	if ts.cleaner != nil {
		ts.cleaner.Unregister(tp)
	}
	for _, dd := range ts.dataDirs {
		if dd.Log(tp) == l {
			dd.RemoveLog(tp)
		}
	}
	if err := ts.retireDir(l.Dir()); err != nil {
		return err
	}
	ts.writeCheckpoints()
	cl.log.Info("partition deleted", "topic", tp.Topic, "partition", tp.Partition, "dir", l.Dir())
	return nil
}

// onTruncate writes the lowered recovery point of a log a follower cut
// (Kafka's LogManager.truncateTo), so the cut tail is scanned again after a
// power loss brings it back.
func (cl *clusterNode) onTruncate(tp replica.TopicPartition, l *segment.Log) {
	cl.s.topics.moveTruncated(tp, l) // a move's copy follows the cut
	dd := cl.s.topics.dataDirOf(filepath.Dir(l.Dir()))
	if err := dd.WriteCheckpoints(); err != nil && !errors.Is(err, recovery.ErrClosed) {
		cl.log.Error("writing the recovery point after a truncation", "topic", tp.Topic, "partition", tp.Partition, "error", err)
	}
}

// emptiestOnlineDir is the online log dir holding the fewest partition
// directories, nil when every one is offline.
func (cl *clusterNode) emptiestOnlineDir() *recovery.DataDir {
	ts := cl.s.topics
	var best *recovery.DataDir
	bestN := -1
	for _, dd := range ts.dataDirs {
		if dd.Err() != nil {
			continue
		}
		if n := len(subdirs(ts.fs, dd.Dir())); bestN < 0 || n < bestN {
			best, bestN = dd, n
		}
	}
	return best
}

// logStrays names the recovered partitions no LeaderAndIsr claimed (after
// the first one): kept, not served.
func (cl *clusterNode) logStrays() {
	for _, dd := range cl.s.topics.dataDirs {
		for tp, l := range dd.Logs() {
			if cl.rm.Partition(tp.Topic, tp.Partition) == nil {
				cl.log.Warn("partition not assigned to this broker: kept, not served (a stray log, as Kafka 2.x keeps them)",
					"topic", tp.Topic, "partition", tp.Partition, "dir", l.Dir())
			}
		}
	}
}

// online reports whether a replica's log dir is online.
func (cl *clusterNode) online(p *replica.Partition) bool {
	dd := cl.s.topics.dataDirOf(filepath.Dir(p.Log().Dir()))
	return dd == nil || dd.Err() == nil
}

// logDirOffline tells the controller that a log dir of this broker failed
// (Kafka's LogDirFailureHandler: a /log_dir_event_notification znode): it
// sends this broker a LeaderAndIsr for its replicas, those of the offline
// dir answer KAFKA_STORAGE_ERROR, and the controller elects other leaders
// and takes this broker out of their ISRs until it restarts.
func (cl *clusterNode) logDirOffline(dir string) {
	if cl.mem != nil {
		cl.mem.ReportLogDirFailure()
	}
	cl.log.Error("log dir offline: the controller is told, its partitions move to other replicas", "dir", dir)
}
