package cluster

import (
	"maps"
	"slices"
)

// onTopics compares the topics in ZooKeeper with the known ones (Kafka's
// processTopicChange and processPartitionModifications).
func (c *Controller) onTopics(list []Topic) {
	listed := make(map[string]bool, len(list))
	sorted := slices.Clone(list)
	slices.SortStableFunc(sorted, func(a, b Topic) int {
		if a.Name < b.Name {
			return -1
		} else if a.Name > b.Name {
			return 1
		}
		return 0
	})
	for i := range sorted {
		nt := &sorted[i]
		if listed[nt.Name] {
			continue
		}
		listed[nt.Name] = true
		if id, ok := c.tombstones[nt.Name]; ok && id == nt.ID {
			continue // the topic this controller deleted, in a stale read
		}
		if err := checkReplicaLists(nt.Replicas); err != nil {
			c.logf("ignoring topic %s: %v", nt.Name, err)
			continue
		}
		t := c.topics[nt.Name]
		if t != nil && t.id != nt.ID && nt.ID != ([16]byte{}) {
			c.logf("topic %s was replaced behind the controller (id %s, now %s): forgetting the old one",
				nt.Name, encodeTopicID(t.id), encodeTopicID(nt.ID))
			c.removeTopic(nt.Name)
			t = nil
		}
		if t == nil {
			c.newTopic(nt)
			continue
		}
		if nt.Version > t.version {
			t.version = nt.Version
		}
		if nt.Configs != nil && !maps.Equal(nt.Configs, t.configs) {
			c.onTopicConfig(t.name, nt.Configs)
		}
		for p := 0; p < min(len(t.parts), len(nt.Replicas)); p++ {
			if nt.Version >= t.version && !slices.Equal(t.parts[p].replicas, nt.Replicas[p]) {
				c.logf("ignoring new replicas %v of %s-%d (has %v): reassign with AlterPartitionReassignments", nt.Replicas[p], t.name, p, t.parts[p].replicas)
			}
		}
		if len(nt.Replicas) > len(t.parts) {
			if t.deleting {
				c.logf("not adding partitions to %s: it is being deleted", t.name)
				continue
			}
			first := len(t.parts)
			for _, rs := range nt.Replicas[first:] {
				t.parts = append(t.parts, cpart{replicas: slices.Clone(rs)})
			}
			c.newPartitions(t, first)
		}
	}
	for name := range c.tombstones {
		if !listed[name] {
			delete(c.tombstones, name)
		}
	}
	var gone []string
	for _, name := range c.names {
		if !listed[name] {
			gone = append(gone, name)
		}
	}
	for _, name := range gone {
		c.logf("topic %s disappeared from ZooKeeper: forgetting it", name)
		c.removeTopic(name)
	}
}

// newTopic is Kafka's onNewPartitionCreation for a whole topic.
func (c *Controller) newTopic(nt *Topic) {
	t := newCTopic(nt)
	t.configs = maps.Clone(nt.Configs)
	c.topics[t.name] = t
	c.addTopicName(t.name)
	c.backfillTopicID(t)
	c.newPartitions(t, 0)
}

// newPartitions brings partitions first.. of t online: state znodes
// created with the online replicas as the ISR, LeaderAndIsr (is_new) to
// them, UpdateMetadata to every live broker.
func (c *Controller) newPartitions(t *ctopic, first int) {
	for p := first; p < len(t.parts); p++ {
		c.electOffline(t, int32(p))
	}
}

// onTopicConfig takes a topic's new overrides; enabling unclean election
// elects its offline partitions at once (Kafka 2.7+).
func (c *Controller) onTopicConfig(name string, configs map[string]string) {
	t := c.topics[name]
	if t == nil {
		return
	}
	was := t.unclean(c.opts.UncleanLeaderElectionEnable)
	t.configs = maps.Clone(configs)
	if t.configs == nil {
		t.configs = map[string]string{}
	}
	if !was && t.unclean(c.opts.UncleanLeaderElectionEnable) && !t.deleting {
		c.triggerOnline(t)
	}
}
