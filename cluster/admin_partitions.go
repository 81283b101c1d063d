package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// AddPartitions grows topic name to total partitions (Kafka's
// AdminZkClient.addPartitions; the controller creates the new partitions'
// state when it sees the assignment change). newReplicas are the new
// partitions' replicas (total minus the current count of them), checked
// against the live brokers; nil places them with AssignAdditionalReplicas
// over the live brokers, drawing from rnd. The assignment is rewritten by a
// set at the version read (topic id and reassignment fields kept), so a
// concurrent change fails it; it is then read and tried again, a few
// times. Refusals: ErrUnknownTopic, ErrInvalidTopic (marked for deletion),
// ErrInvalidPartitions (total not above the current count),
// ErrInvalidReplicaAssignment, ErrInvalidReplicationFactor (too few live
// brokers to place them).
func (a *Admin) AddPartitions(name string, total int, newReplicas [][]int32, rnd *rand.Rand) error {
	for attempt := 0; ; attempt++ {
		ta, version, err := a.ReadAssignment(name)
		if err != nil {
			return err
		}
		if marked, _, err := a.zk.Exists(DeleteTopicPath(name)); err != nil {
			return err
		} else if marked {
			return fmt.Errorf("%w: the topic %s is queued for deletion", ErrInvalidTopic, name)
		}
		existing, err := ta.Replicas()
		if err != nil {
			return err
		}
		switch {
		case total < len(existing):
			return fmt.Errorf("%w: topic %s currently has %d partitions, which is higher than the requested %d",
				ErrInvalidPartitions, name, len(existing), total)
		case total == len(existing):
			return fmt.Errorf("%w: topic %s already has %d partitions", ErrInvalidPartitions, name, total)
		}
		brokers, _, err := a.LiveBrokers()
		if err != nil {
			return err
		}
		add := newReplicas
		if add == nil {
			pb := make([]PlacementBroker, len(brokers))
			for i, b := range brokers {
				pb[i] = PlacementBroker{ID: b.ID, Rack: b.Rack}
			}
			if add, err = AssignAdditionalReplicas(pb, existing, total, rnd); err != nil {
				return fmt.Errorf("topic %s: %w", name, err)
			}
		} else if err := checkAddedReplicas(existing, add, total, brokers); err != nil {
			return fmt.Errorf("topic %s: %w", name, err)
		}
		for i, rs := range add {
			ta.Partitions[int32(len(existing)+i)] = slices.Clone(rs)
		}
		_, err = a.zk.Set(TopicPath(name), ta.Encode(), version)
		if errors.Is(err, ErrBadVersion) && attempt < 5 {
			continue
		}
		return err
	}
}

// checkAddedReplicas is Kafka's validateReplicaAssignment for new
// partitions: as many as added, each with the existing replication
// factor, no broker twice, only live brokers.
func checkAddedReplicas(existing, add [][]int32, total int, brokers []Broker) error {
	if len(add) != total-len(existing) {
		return fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided",
			ErrInvalidReplicaAssignment, total-len(existing), len(add))
	}
	live := func(id int32) bool {
		for _, b := range brokers {
			if b.ID == id {
				return true
			}
		}
		return false
	}
	if err := ValidateAssignment(add, live); err != nil {
		return err
	}
	if rf := len(existing[0]); len(add[0]) != rf {
		return fmt.Errorf("%w: inconsistent replication factor between partitions, partition 0 has %d while the new ones have %d",
			ErrInvalidReplicaAssignment, rf, len(add[0]))
	}
	return nil
}
