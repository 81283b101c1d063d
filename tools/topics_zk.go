package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/twmb/franz-go/pkg/kerr"
)

// zkBackend is the topicsBackend of --zookeeper
// (HOST:PORT[,HOST:PORT...][/chroot]), Kafka 2.x's way: it reads and writes
// the znodes itself (package cluster's Admin, Kafka's AdminZkClient) and the
// controller picks the changes up. It reads the topics from /brokers/topics,
// their partition state znodes and /config/topics, the live brokers from
// /brokers/ids and pending deletions from /admin/delete_topics; it creates
// a topic by writing /config/topics/T and /brokers/topics/T (placed over the
// live brokers as Kafka's AdminUtils does, or --replica-assignment checked
// against them), grows one by rewriting /brokers/topics/T at the version it
// read, and deletes one by creating /admin/delete_topics/T.
type zkBackend struct {
	zk    cluster.ZK
	admin *cluster.Admin
	rnd   *rand.Rand
}

// openZooKeeperBackend connects to ZooKeeper, waiting at most timeout for a
// session (then exit 2).
func openZooKeeperBackend(connect string, timeout time.Duration) (topicsBackend, error) {
	if _, _, err := cluster.ParseZKConnect(connect); err != nil {
		return nil, usageErr("--zookeeper: %v", err)
	}
	zk, err := cluster.DialZK(cluster.ZKConfig{Connect: connect, SessionTimeout: max(timeout, 6*time.Second),
		ConnectionTimeout: timeout, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, failErr(fmt.Errorf("cannot reach ZooKeeper at %s: %w", connect, err))
	}
	return &zkBackend{zk: zk, admin: cluster.NewAdmin(zk), rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, nil
}

func (b *zkBackend) close() { b.zk.Close() }

// zkRefusal is a cluster refusal as the Kafka error it maps to (exit 1);
// other errors (ZooKeeper unreachable) are returned as they are (exit 2).
func zkRefusal(err error) error {
	if err == nil {
		return nil
	}
	if code := cluster.ErrorCode(err); code > 0 {
		return &topicErr{err: kerr.ErrorForCode(code), msg: err.Error()}
	}
	if errors.Is(err, cluster.ErrBadZnode) {
		return &topicErr{err: kerr.UnknownServerError, msg: err.Error()}
	}
	return err
}

func (b *zkBackend) list(ctx context.Context) ([]topicListing, error) {
	names, err := b.admin.ListTopics()
	if err != nil {
		return nil, err
	}
	marked, err := b.admin.TopicsMarkedForDeletion()
	if err != nil {
		return nil, err
	}
	out := make([]topicListing, 0, len(names))
	for _, n := range names {
		out = append(out, topicListing{name: n, internal: internalTopics[n], markedForDeletion: slices.Contains(marked, n)})
	}
	return out, nil
}

// describe reads each topic's assignment, overrides and partition states.
// A partition without a state znode has no leader and an empty ISR; its
// replicas on brokers not registered are offline.
func (b *zkBackend) describe(ctx context.Context, names []string) (*clusterView, error) {
	brokers, _, err := b.admin.LiveBrokers()
	if err != nil {
		return nil, err
	}
	v := &clusterView{liveBrokers: map[int32]bool{}}
	for _, br := range brokers {
		v.liveBrokers[br.ID] = true
	}
	marked, err := b.admin.TopicsMarkedForDeletion()
	if err != nil {
		return nil, err
	}
	sorted := slices.Clone(names)
	sort.Strings(sorted)
	for _, name := range sorted {
		t, err := b.describeTopic(name, v.liveBrokers)
		if err != nil && !isRefusal(err) {
			return nil, err
		}
		t.err = err
		t.markedForDeletion = slices.Contains(marked, name)
		v.topics = append(v.topics, t)
	}
	return v, nil
}

func isRefusal(err error) bool {
	var te *topicErr
	return errors.As(err, &te)
}

func (b *zkBackend) describeTopic(name string, live map[int32]bool) (topicView, error) {
	t := topicView{name: name, internal: internalTopics[name]}
	ta, _, err := b.admin.ReadAssignment(name)
	if err != nil {
		return t, zkRefusal(err)
	}
	t.id = ta.TopicID
	replicas, err := ta.Replicas()
	if err != nil {
		return t, zkRefusal(err)
	}
	cfg, err := b.admin.TopicConfig(name)
	if err != nil {
		return t, zkRefusal(err)
	}
	t.configs = []configEntry{}
	for _, k := range sortedKeys(cfg) {
		t.configs = append(t.configs, configEntry{name: k, value: cfg[k]})
	}
	for p, rs := range replicas {
		pv := partitionView{partition: int32(p), leader: -1, replicas: rs, isr: []int32{}}
		st, err := b.admin.PartitionState(name, int32(p))
		switch {
		case err != nil && !errors.Is(err, cluster.ErrBadZnode):
			return t, err
		case err != nil:
			pv.err = &topicErr{err: kerr.UnknownServerError, msg: err.Error()}
		case st != nil:
			pv.leader, pv.leaderEpoch, pv.isr = st.Leader, st.LeaderEpoch, st.ISR
		default:
			pv.err = kerr.LeaderNotAvailable
		}
		for _, r := range rs {
			if !live[r] {
				pv.offline = append(pv.offline, r)
			}
		}
		if add, rem := ta.Adding[int32(p)], ta.Removing[int32(p)]; len(add) > 0 || len(rem) > 0 {
			pv.reassignment = &reassignment{replicas: rs, adding: add, removing: rem}
		}
		t.partitions = append(t.partitions, pv)
	}
	return t, nil
}

// create places the topic over the live brokers (or checks
// --replica-assignment against them) and writes it.
func (b *zkBackend) create(ctx context.Context, t newTopic) (createdTopic, error) {
	brokers, _, err := b.admin.LiveBrokers()
	if err != nil {
		return createdTopic{}, err
	}
	assign := t.assignment
	if assign == nil {
		pb := make([]cluster.PlacementBroker, len(brokers))
		for i, br := range brokers {
			pb[i] = cluster.PlacementBroker{ID: br.ID, Rack: br.Rack}
		}
		if assign, err = cluster.AssignReplicas(pb, int(t.partitions), int(t.replicationFactor), b.rnd); err != nil {
			return createdTopic{}, zkRefusal(err)
		}
	} else if err := cluster.ValidateAssignment(assign, func(id int32) bool {
		return slices.ContainsFunc(brokers, func(br cluster.Broker) bool { return br.ID == id })
	}); err != nil {
		return createdTopic{}, zkRefusal(err)
	}
	id, err := b.admin.CreateTopic(t.name, assign, t.configs, [16]byte{})
	if err != nil {
		return createdTopic{}, zkRefusal(err)
	}
	return createdTopic{id: id, partitions: int32(len(assign)), replicationFactor: int16(len(assign[0]))}, nil
}

func (b *zkBackend) addPartitions(ctx context.Context, grow []partitionGrowth) (map[string]error, error) {
	out := map[string]error{}
	for _, g := range grow {
		err := b.admin.AddPartitions(g.topic, int(g.total), g.assignment, b.rnd)
		if err != nil && !isRefusal(zkRefusal(err)) {
			return nil, err
		}
		out[g.topic] = zkRefusal(err)
	}
	return out, nil
}

// delete marks the topics for deletion; Kafka refuses internal topics.
func (b *zkBackend) delete(ctx context.Context, names []string) (map[string]error, error) {
	out := map[string]error{}
	for _, name := range names {
		if internalTopics[name] {
			out[name] = &topicErr{err: kerr.InvalidTopicException,
				msg: fmt.Sprintf("Topic %s is a kafka internal topic and is not allowed to be marked for deletion.", name)}
			continue
		}
		err := b.admin.DeleteTopic(name)
		if err != nil && !isRefusal(zkRefusal(err)) {
			return nil, err
		}
		out[name] = zkRefusal(err)
	}
	return out, nil
}
