package server

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/stratalog/strata/cluster"
)

// Topic administration through ZooKeeper, Kafka's AdminZkClient: the
// brokers that take CreateTopics, CreatePartitions, DeleteTopics and the
// alter-configs requests write the znodes; the controller (watching them)
// creates the partitions' states, elects leaders and tells the brokers.
//
//   - create: /config/topics/T first (its overrides, "{}" if none), then
//     /brokers/topics/T (the assignment, with a new topic id). A topic
//     marked for deletion, or existing, is TOPIC_ALREADY_EXISTS.
//   - partitions: /brokers/topics/T rewritten with the new partitions, on
//     the version read (a concurrent change fails the request).
//   - delete: /admin/delete_topics/T created.
//   - configs: /config/topics/T written, then the notification
//     /config/changes/config_change_N that every broker follows.

// liveBrokers are the live brokers as placement sees them (id, rack), from
// the metadata cache.
func (im *metadataImage) placementBrokers() []cluster.PlacementBroker {
	out := make([]cluster.PlacementBroker, 0, len(im.brokers))
	for _, b := range im.brokers {
		pb := cluster.PlacementBroker{ID: b.id}
		if b.rack != nil {
			pb.Rack = *b.rack
		}
		out = append(out, pb)
	}
	return out
}

// placementRand is a placement's random source (the start broker and
// follower shift), seeded from crypto/rand.
func placementRand() *rand.Rand {
	var seed [16]byte
	_, _ = crand.Read(seed[:])
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
}

// createTopic places and writes a new topic. assignment, when given, is
// the explicit replica lists (checked against the live brokers); otherwise
// partitions and replicationFactor place it over the live brokers (rack
// aware). Errors: ErrInvalidTopic, ErrConfig, errTopicExists, and
// package cluster's placement errors (INVALID_PARTITIONS,
// INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT).
func (cl *clusterNode) createTopic(_ context.Context, name string, partitions int32, replicationFactor int16, assignment [][]int32,
	configs map[string]string, validateOnly bool) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	if err := validateTopicConfigs(configs, nil); err != nil {
		return err
	}
	probe := &topic{name: name, configs: configs}
	if err := cl.s.topics.applyTopicConfigs(probe, strictAll); err != nil {
		return err
	}
	im := cl.images.load()
	if assignment == nil {
		placed, err := cluster.AssignReplicas(im.placementBrokers(), int(partitions), int(replicationFactor), placementRand())
		if err != nil {
			if errors.Is(err, cluster.ErrInvalidReplicationFactor) {
				return fmt.Errorf("%w: replication factor %d larger than the %d available brokers", cluster.ErrInvalidReplicationFactor, replicationFactor, len(im.brokers))
			}
			return err
		}
		assignment = placed
	} else if err := cluster.ValidateAssignment(assignment, im.alive); err != nil {
		return err
	}
	for _, p := range []string{cluster.TopicPath(name), cluster.DeleteTopicPath(name)} {
		ok, _, err := cl.zk.Exists(p)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCluster, err)
		}
		if ok {
			if p == cluster.DeleteTopicPath(name) {
				return fmt.Errorf("%w: topic %s is marked for deletion", errTopicExists, name)
			}
			return fmt.Errorf("%w: topic %s", errTopicExists, name)
		}
	}
	if validateOnly {
		return nil
	}
	if err := cl.writeTopicConfig(name, configs); err != nil {
		return err
	}
	a := cluster.TopicAssignment{TopicID: newUUID(), Partitions: map[int32][]int32{}}
	for p, rs := range assignment {
		a.Partitions[int32(p)] = rs
	}
	if _, err := cl.zk.Create(cluster.TopicPath(name), a.Encode(), cluster.Persistent); err != nil {
		if errors.Is(err, cluster.ErrNodeExists) {
			return fmt.Errorf("%w: topic %s", errTopicExists, name)
		}
		return fmt.Errorf("%w: writing %s: %w", ErrCluster, cluster.TopicPath(name), err)
	}
	cl.log.Info("topic created", "topic", name, "partitions", len(assignment), "replication_factor", len(assignment[0]),
		"topic_id", uuidString(a.TopicID), "assignment", assignment)
	return nil
}

// writeTopicConfig writes /config/topics/T (created or replaced).
func (cl *clusterNode) writeTopicConfig(name string, configs map[string]string) error {
	path := cluster.TopicConfigPath(name)
	data := cluster.EncodeEntityConfig(configs)
	if _, err := cl.zk.Set(path, data, -1); err == nil {
		return nil
	} else if !errors.Is(err, cluster.ErrNoNode) {
		return fmt.Errorf("%w: writing %s: %w", ErrCluster, path, err)
	}
	if _, err := cl.zk.Create(path, data, cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
		return fmt.Errorf("%w: writing %s: %w", ErrCluster, path, err)
	}
	return nil
}

// readAssignment reads /brokers/topics/T: the replicas by partition and the
// znode's version; errUnknownTopic when it does not exist.
func (cl *clusterNode) readAssignment(name string) (cluster.TopicAssignment, int32, error) {
	data, st, err := cl.zk.Get(cluster.TopicPath(name))
	if errors.Is(err, cluster.ErrNoNode) {
		return cluster.TopicAssignment{}, 0, errUnknownTopic
	}
	if err != nil {
		return cluster.TopicAssignment{}, 0, fmt.Errorf("%w: reading %s: %w", ErrCluster, cluster.TopicPath(name), err)
	}
	a, err := cluster.DecodeTopicAssignment(name, data)
	if err != nil {
		return cluster.TopicAssignment{}, 0, fmt.Errorf("%w: %w", ErrCluster, err)
	}
	return a, st.Version, nil
}

// replicaLists is an assignment's replicas in partition order.
func replicaLists(a *cluster.TopicAssignment) [][]int32 {
	ps := make([]int32, 0, len(a.Partitions))
	for p := range a.Partitions {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	out := make([][]int32, len(ps))
	for i, p := range ps {
		out[i] = a.Partitions[p]
	}
	return out
}

// addPartitions grows topic name to total partitions (Kafka's
// AdminZkClient.addPartitions): newAssignment, when given, places the new
// ones (checked against the live brokers), else they continue partition
// 0's placement. The assignment znode is rewritten at the version read.
func (cl *clusterNode) addPartitions(name string, total int32, newAssignment [][]int32, validateOnly bool) error {
	a, version, err := cl.readAssignment(name)
	if err != nil {
		return err
	}
	existing := replicaLists(&a)
	if int(total) <= len(existing) {
		return fmt.Errorf("%w: topic currently has %d partitions, which is higher than or equal to the requested %d", errPartitionCount, len(existing), total)
	}
	im := cl.images.load()
	if newAssignment == nil {
		if newAssignment, err = cluster.AssignAdditionalReplicas(im.placementBrokers(), existing, int(total), placementRand()); err != nil {
			return err
		}
	} else {
		if int32(len(newAssignment)) != total-int32(len(existing)) {
			return fmt.Errorf("%w: the assignment must name a replica list for each of the %d new partitions", cluster.ErrInvalidReplicaAssignment, total-int32(len(existing)))
		}
		if err := cluster.ValidateAssignment(append(append([][]int32(nil), existing[:1]...), newAssignment...), im.alive); err != nil {
			return err
		}
	}
	if validateOnly {
		return nil
	}
	for i, rs := range newAssignment {
		a.Partitions[int32(len(existing)+i)] = rs
	}
	if _, err := cl.zk.Set(cluster.TopicPath(name), a.Encode(), version); err != nil {
		if errors.Is(err, cluster.ErrBadVersion) {
			return fmt.Errorf("%w: the topic changed meanwhile; try again", errConcurrentChange)
		}
		return fmt.Errorf("%w: writing %s: %w", ErrCluster, cluster.TopicPath(name), err)
	}
	cl.log.Info("partitions added", "topic", name, "from", len(existing), "to", total, "new_assignment", newAssignment)
	return nil
}

// errConcurrentChange: a znode changed between its read and a conditional
// write.
var errConcurrentChange = errors.New("server: concurrent change")

// markForDeletion creates /admin/delete_topics/T for an existing topic.
func (cl *clusterNode) markForDeletion(name string) error {
	ok, _, err := cl.zk.Exists(cluster.TopicPath(name))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCluster, err)
	}
	if !ok {
		return errUnknownTopic
	}
	if _, err := cl.zk.Create(cluster.DeleteTopicPath(name), nil, cluster.Persistent); err != nil && !errors.Is(err, cluster.ErrNodeExists) {
		return fmt.Errorf("%w: writing %s: %w", ErrCluster, cluster.DeleteTopicPath(name), err)
	}
	cl.log.Info("topic marked for deletion", "topic", name)
	return nil
}

// readTopicOverrides reads a topic's overrides from ZooKeeper;
// errUnknownTopic when /brokers/topics/T does not exist.
func (cl *clusterNode) readTopicOverrides(name string) (map[string]string, error) {
	ok, _, err := cl.zk.Exists(cluster.TopicPath(name))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCluster, err)
	}
	if !ok {
		return nil, errUnknownTopic
	}
	path := cluster.TopicConfigPath(name)
	data, _, err := cl.zk.Get(path)
	if errors.Is(err, cluster.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %w", ErrCluster, path, err)
	}
	cfg, err := cluster.DecodeEntityConfig(path, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCluster, err)
	}
	return cfg, nil
}

// changeTopicConfig replaces a topic's overrides (Kafka's
// AdminZkClient.changeTopicConfig): checked, written to /config/topics/T,
// announced with a /config/changes notification.
func (cl *clusterNode) changeTopicConfig(name string, configs map[string]string, changed map[string]bool, validateOnly bool) error {
	if err := validateTopicConfigs(configs, changed); err != nil {
		return err
	}
	strict := strictAll
	if changed != nil {
		strict = func(k string) bool { return changed[k] }
	}
	probe := &topic{name: name, configs: configs}
	if err := cl.s.topics.applyTopicConfigs(probe, strict); err != nil {
		return err
	}
	if ok, _, err := cl.zk.Exists(cluster.TopicPath(name)); err != nil {
		return fmt.Errorf("%w: %w", ErrCluster, err)
	} else if !ok {
		return errUnknownTopic
	}
	if validateOnly {
		return nil
	}
	if err := cl.writeTopicConfig(name, configs); err != nil {
		return err
	}
	data := cluster.EncodeConfigChange(cluster.ConfigTypeTopic + "/" + name)
	if _, err := cl.zk.Create(cluster.ConfigChangeCreatePath(), data, cluster.PersistentSequential); err != nil {
		return fmt.Errorf("%w: writing the config change notification: %w", ErrCluster, err)
	}
	cl.log.Info("topic configs written", "topic", name, "configs", configs)
	return nil
}
