package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// Group coordination in a cluster (Kafka's GroupCoordinator in ZooKeeper
// mode): a group belongs to the __consumer_offsets partition
// abs(hash(group)) % partitions, and the leader of that partition is its
// coordinator. Becoming its leader loads the partition's groups in the
// background (their requests answer COORDINATOR_LOAD_IN_PROGRESS
// meanwhile); losing it unloads them (parked joins and syncs answer
// NOT_COORDINATOR, as Kafka's onGroupUnloaded); every other broker answers
// NOT_COORDINATOR. Writes to the offsets log go through the partition as
// leader with acks=-1 semantics (Kafka's coordinator appends with required
// acks -1 and waits up to offsets.commit.timeout.ms).

// offsetsCommitTimeout is Kafka's offsets.commit.timeout.ms default: how
// long a coordinator write waits for the ISR.
const offsetsCommitTimeout = 5 * time.Second

// ownership is the coordinator's per-partition state in cluster mode.
type ownership struct {
	mu    sync.Mutex // serializes leadership changes
	owned []atomic.Bool
	epoch []int32  // leader epoch a partition was loaded at
	gen   []uint64 // bumped at every change: a load of an older one is dropped
}

// clusterGroups sizes the coordinator for the offsets topic as ZooKeeper
// holds it (its partition count wins over offsets.topic.num.partitions, as
// in Kafka) and marks every partition not owned.
func (co *coordinator) clusterGroups(partitions int32) {
	co.loading = make([]atomic.Bool, partitions)
	co.own = &ownership{owned: make([]atomic.Bool, partitions), epoch: make([]int32, partitions), gen: make([]uint64, partitions)}
}

// clusterGroupCheck is groupCheck's cluster part: NOT_COORDINATOR unless
// this broker leads the group's offsets partition.
func (co *coordinator) clusterGroupCheck(p int32) int16 {
	if !co.own.owned[p].Load() {
		return kerr.NotCoordinator.Code
	}
	return 0
}

// offsetsLeadershipChanged follows the leadership of offsets partitions
// after a LeaderAndIsr or StopReplica naming them.
func (cl *clusterNode) offsetsLeadershipChanged(parts []int32) {
	co := cl.s.groups
	if co == nil || co.own == nil {
		return
	}
	own := co.own
	own.mu.Lock()
	defer own.mu.Unlock()
	for _, p := range parts {
		if p < 0 || int(p) >= len(own.owned) {
			continue
		}
		rp := cl.rm.Partition(OffsetsTopic, p)
		leads := rp != nil && rp.Role() == replica.RoleLeader && cl.online(rp)
		epoch := int32(-1)
		if leads {
			epoch = rp.LeaderEpoch()
		}
		was := own.owned[p].Load()
		if was && leads && own.epoch[p] == epoch {
			continue
		}
		own.gen[p]++
		if was {
			n := co.unloadPartition(p)
			co.log.Info("offsets partition unloaded", "partition", p, "groups", n)
		}
		if !leads {
			own.owned[p].Store(false)
			co.loading[p].Store(false)
			continue
		}
		own.epoch[p] = epoch
		co.loading[p].Store(true)
		own.owned[p].Store(true)
		gen := own.gen[p]
		co.s.bgWG.Add(1)
		go cl.loadOffsetsPartition(p, rp, gen)
	}
}

// loadOffsetsPartition reads one offsets partition into the group table, as
// the single node does at start; a load overtaken by another leadership
// change drops what it loaded.
func (cl *clusterNode) loadOffsetsPartition(p int32, rp *replica.Partition, gen uint64) {
	co := cl.s.groups
	defer co.s.bgWG.Done()
	if hook := offsetsLoadHook; hook != nil {
		hook(p)
	}
	start := time.Now()
	l := rp.Log()
	n, err := co.loadPartition(&partition{topic: OffsetsTopic, index: p, dir: l.Dir(), log: l})
	own := co.own
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.gen[p] != gen {
		co.unloadPartition(p)
		return
	}
	if err != nil {
		co.log.Error("loading offsets partition", "partition", p, "error", err)
	}
	co.loading[p].Store(false)
	co.log.Info("offsets partition loaded", "partition", p, "groups", n, "leader_epoch", own.epoch[p], "took", time.Since(start))
}

// unloadPartition drops the groups of offsets partition p (own.mu held):
// timers stop, parked joins and syncs answer NOT_COORDINATOR.
func (co *coordinator) unloadPartition(p int32) int {
	n := int32(len(co.loading))
	var gs []*group
	co.mu.Lock()
	for id, g := range co.groups {
		if offsetsPartition(id, n) == p {
			gs = append(gs, g)
			delete(co.groups, id)
		}
	}
	co.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		g.shutdownWith(kerr.NotCoordinator.Code)
		g.setState(groupDead)
		g.mu.Unlock()
	}
	return len(gs)
}

// appendOffsets writes a coordinator batch to group's offsets partition as
// its leader and waits until the ISR has it (acks=-1), mapping the outcome
// as Kafka's GroupMetadataManager does: not the leader (or a storage
// error) NOT_COORDINATOR, too few in-sync replicas COORDINATOR_NOT_AVAILABLE,
// no answer within offsets.commit.timeout.ms REQUEST_TIMED_OUT.
func (cl *clusterNode) appendOffsets(group string, batch []byte) int16 {
	co := cl.s.groups
	return cl.appendInternal(OffsetsTopic, offsetsPartition(group, int32(len(co.loading))), -1, batch)
}

// appendInternal is appendOffsets for any partition this broker leads (the
// transaction coordinator's __transaction_state records and markers too);
// leaderEpoch, when not -1, must be the partition's.
func (cl *clusterNode) appendInternal(topic string, p, leaderEpoch int32, batch []byte) int16 {
	rp := cl.rm.Partition(topic, p)
	if rp == nil || (leaderEpoch >= 0 && rp.LeaderEpoch() != leaderEpoch) {
		return kerr.NotCoordinator.Code
	}
	minISR := int(cl.topicConfig(topic).effMinISR(cl.cfg))
	now := time.Now().UnixMilli()
	res, err := rp.AppendAsLeader(batch, -1, minISR, now)
	switch {
	case err == nil:
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, segment.ErrTooLarge), errors.Is(err, replica.ErrInvalidRecords):
		return kerr.InvalidCommitOffsetSize.Code
	default:
		return kerr.NotCoordinator.Code
	}
	cl.appendedAsLeader()
	res.Wait.Deadline = now + offsetsCommitTimeout.Milliseconds()
	switch st := replica.Await(cl.ctx, rp, &res.Wait, nowMs); st {
	case replica.AckCommitted:
		return 0
	case replica.AckNotEnoughReplicasAfterAppend:
		return kerr.CoordinatorNotAvailable.Code
	case replica.AckNotLeader:
		return kerr.NotCoordinator.Code
	default:
		return kerr.RequestTimedOut.Code
	}
}

func nowMs() int64 { return time.Now().UnixMilli() }

// effMinISR is a topic's min.insync.replicas (override, else the broker's).
func (t *topic) effMinISR(base *Config) int32 {
	if c := t.eff.Load(); c != nil {
		return c.Cluster.MinInsyncReplicas
	}
	return base.Cluster.MinInsyncReplicas
}

// ensureOffsetsTopic creates __consumer_offsets through ZooKeeper when it
// does not exist: offsets.topic.num.partitions partitions of
// offsets.topic.replication.factor replicas, compacted. Kafka refuses while
// fewer brokers live than the replication factor ("This error can be
// ignored if the cluster is starting up and not all brokers are up yet"):
// the caller answers COORDINATOR_NOT_AVAILABLE until then.
func (cl *clusterNode) ensureOffsetsTopic() error {
	if _, ok := cl.images.load().topics[OffsetsTopic]; ok {
		return nil
	}
	co := cl.s.groups
	co.topicMu.Lock()
	defer co.topicMu.Unlock()
	rf := cl.cfg.Cluster.OffsetsTopicReplicationFactor
	if live := len(cl.images.load().brokers); live < int(rf) {
		return fmt.Errorf("%w: %d live brokers do not meet the replication factor %d of the offsets topic (offsets.topic.replication.factor); "+
			"this goes away once enough brokers are up", errNotEnoughBrokers, live, rf)
	}
	err := cl.createTopic(context.Background(), OffsetsTopic, int32(len(co.loading)), rf, nil, co.offsetsTopicConfigs(), false)
	if err != nil && !errors.Is(err, cluster.ErrTopicExists) {
		return err
	}
	return nil
}

// errNotEnoughBrokers: fewer live brokers than a replication factor needs.
var errNotEnoughBrokers = errors.New("server: not enough live brokers")

// partitionKnown reports whether a partition exists: in the topic table on
// a single node, in the metadata cache in cluster mode.
func (s *Server) partitionKnown(topic string, p int32) bool {
	if s.cl != nil {
		_, ok := s.cl.images.load().partition(topic, p)
		return ok
	}
	return s.topics.partition(topic, p) != nil
}

// offsetsPartitionCount is the offsets topic's partition count: ZooKeeper's
// when the topic exists (it wins over offsets.topic.num.partitions, as in
// Kafka), else the setting.
func (cl *clusterNode) offsetsPartitionCount() int32 {
	a, _, err := cl.readAssignment(OffsetsTopic)
	switch {
	case err == nil && len(a.Partitions) > 0:
		return int32(len(a.Partitions))
	case err != nil && !errors.Is(err, cluster.ErrUnknownTopic):
		cl.log.Warn("reading the offsets topic's assignment; using offsets.topic.num.partitions", "error", err)
	}
	return cl.cfg.OffsetsTopicNumPartitions
}
