package server

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/stratalog/strata/cluster"
)

// Topic administration through ZooKeeper with package cluster's Admin
// (Kafka's AdminZkClient): the brokers that take CreateTopics,
// CreatePartitions, DeleteTopics and the alter-configs requests check what
// Kafka's KafkaApis checks (names, configs with the broker's validators,
// placement over the live brokers of the metadata cache) and the Admin
// writes the znodes; the controller, watching them, creates the partition
// states, elects leaders and tells the brokers.
//
//   - create: /config/topics/T and /brokers/topics/T (with a new topic id)
//     in one multi that proves /admin/delete_topics/T absent: an existing
//     topic, or one still marked for deletion, is TOPIC_ALREADY_EXISTS.
//   - partitions: /brokers/topics/T rewritten with the new partitions at
//     the version read.
//   - delete: /admin/delete_topics/T created.
//   - configs: /config/topics/T written, then the notification
//     /config/changes/config_change_N every broker follows.

// placementBrokers are the live brokers as placement sees them (id, rack),
// from the metadata cache.
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

func (cl *clusterNode) admin() *cluster.Admin { return cluster.NewAdmin(cl.zk) }

// createTopic places and writes a new topic. assignment, when given, is
// the explicit replica lists (checked against the live brokers); otherwise
// partitions and replicationFactor place it over the live brokers (rack
// aware). Errors: ErrInvalidTopic, ErrConfig, package cluster's
// ErrTopicExists and placement errors (INVALID_PARTITIONS,
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
	if validateOnly {
		if ok, _, err := cl.zk.Exists(cluster.TopicPath(name)); err == nil && ok {
			return fmt.Errorf("%w: topic %q already exists", cluster.ErrTopicExists, name)
		}
		return nil
	}
	id, err := cl.admin().CreateTopic(name, assignment, configs, [16]byte{})
	if err != nil {
		return err
	}
	cl.log.Info("topic created", "topic", name, "partitions", len(assignment), "replication_factor", len(assignment[0]),
		"topic_id", uuidString(id), "assignment", assignment)
	return nil
}

// addPartitions grows topic name to total partitions (Kafka's
// AdminZkClient.addPartitions): newAssignment, when given, places the new
// ones (checked against the live brokers), else they continue partition
// 0's placement. The assignment znode is rewritten at the version read.
func (cl *clusterNode) addPartitions(name string, total int32, newAssignment [][]int32, validateOnly bool) error {
	a, _, err := cl.admin().ReadAssignment(name)
	if err != nil {
		return err
	}
	if int(total) <= len(a.Partitions) {
		return fmt.Errorf("%w: topic currently has %d partitions, which is higher than or equal to the requested %d", errPartitionCount, len(a.Partitions), total)
	}
	if validateOnly {
		return nil
	}
	if err := cl.admin().AddPartitions(name, int(total), newAssignment, placementRand()); err != nil {
		return err
	}
	cl.log.Info("partitions added", "topic", name, "from", len(a.Partitions), "to", total)
	return nil
}

// markForDeletion creates /admin/delete_topics/T for an existing topic.
func (cl *clusterNode) markForDeletion(name string) error {
	if err := cl.admin().DeleteTopic(name); err != nil {
		return err
	}
	cl.log.Info("topic marked for deletion", "topic", name)
	return nil
}

// readAssignment reads /brokers/topics/T.
func (cl *clusterNode) readAssignment(name string) (cluster.TopicAssignment, int32, error) {
	return cl.admin().ReadAssignment(name)
}

// readTopicOverrides reads a topic's overrides from ZooKeeper;
// cluster.ErrUnknownTopic when /brokers/topics/T does not exist.
func (cl *clusterNode) readTopicOverrides(name string) (map[string]string, error) {
	ok, _, err := cl.zk.Exists(cluster.TopicPath(name))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCluster, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: topic %q does not exist", cluster.ErrUnknownTopic, name)
	}
	return cl.admin().TopicConfig(name)
}

// changeTopicConfig replaces a topic's overrides (Kafka's
// AdminZkClient.changeTopicConfig): checked with the broker's validators,
// then written to /config/topics/T and announced with a /config/changes
// notification.
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
		return fmt.Errorf("%w: topic %q does not exist", cluster.ErrUnknownTopic, name)
	}
	if validateOnly {
		return nil
	}
	if err := cl.admin().ChangeTopicConfig(name, configs); err != nil {
		return err
	}
	cl.log.Info("topic configs written", "topic", name, "configs", configs)
	return nil
}
