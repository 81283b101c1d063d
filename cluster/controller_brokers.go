package cluster

import (
	"slices"
)

// activate takes over with a snapshot of ZooKeeper (Kafka's
// onControllerFailover): every live broker is told the whole metadata and
// its replicas' states, new and offline partitions are elected, dead
// replicas leave the ISRs, deletions resume, stale log dir notifications
// are deleted, and topics without an id get one.
func (c *Controller) activate(s *Snapshot) {
	if c.active {
		c.stop(false, "activated again")
	}
	c.clear()
	c.reload = false
	if s == nil || s.ControllerID != c.id {
		c.logf("activation refused: /controller does not name broker %d", c.id)
		c.resigned = true
		return
	}
	c.active = true
	c.epoch, c.epochVersion = s.ControllerEpoch, s.EpochVersion
	c.logf("activated with %d brokers, %d topics", len(s.Brokers), len(s.Topics))
	for _, why := range s.Skipped {
		c.logf("snapshot skipped %s", why)
	}
	for i := range s.Brokers {
		b := s.Brokers[i]
		if old := c.brokers[b.ID]; old == nil || b.Epoch > old.Epoch {
			c.brokers[b.ID] = &b
		}
	}
	for i := range s.Topics {
		ts := &s.Topics[i]
		if c.topics[ts.Name] != nil {
			continue
		}
		t := newCTopic(&ts.Topic)
		t.partitionsNode = ts.PartitionsNode
		t.extraNodes = slices.Clone(ts.ExtraNodes)
		for p := range t.parts {
			if p < len(ts.States) && ts.States[p] != nil {
				t.parts[p].hasState = true
				t.parts[p].st = ts.States[p].clone()
			}
			t.parts[p].node = p < len(ts.PartitionNodes) && ts.PartitionNodes[p]
			t.parts[p].adding, t.parts[p].removing = ts.Adding[int32(p)], ts.Removing[int32(p)]
		}
		c.topics[t.name] = t
		c.addTopicName(t.name)
		c.backfillTopicID(t)
	}
	for _, node := range s.LogDirEvents {
		c.addOp(Op{Kind: OpDelete, Path: ctrlLogDirEventPath(node), Version: -1}, -1)
		c.logDirDone[node] = true
	}
	// Topics queued for deletion are marked before any election, so none
	// of their partitions is brought online (Kafka initializes its
	// TopicDeletionManager before the state machines start).
	c.markDeletions(s.DeleteTopics)
	// Every live broker gets the full metadata and the state of each of its
	// replicas (topics being deleted excepted).
	c.rb.umFull = map[int32]bool{}
	for id := range c.brokers {
		c.rb.umFull[id] = true
	}
	for _, name := range c.names {
		t := c.topics[name]
		if t.deleting {
			continue
		}
		for p := range t.parts {
			if t.parts[p].hasState {
				c.addLeaderAndISR(t.parts[p].replicas, TopicPartition{name, int32(p)}, false)
			}
		}
	}
	c.triggerOnline(nil)
	c.shrinkDead()
	c.resumeDeletions()
	c.resumeReassignments()
	c.onReassignZnode(s.Reassign)
}

func newCTopic(t *Topic) *ctopic {
	ct := &ctopic{name: t.Name, id: t.ID, version: t.Version, configs: t.Configs}
	ct.parts = make([]cpart, len(t.Replicas))
	for p, rs := range t.Replicas {
		ct.parts[p].replicas = slices.Clone(rs)
	}
	return ct
}

// backfillTopicID writes a topic id into an assignment znode that has none
// (Kafka 2.8's controller does the same for topics made by older tools).
func (c *Controller) backfillTopicID(t *ctopic) {
	if t.id != ([16]byte{}) {
		return
	}
	for i := 0; i < 16; i += 8 {
		v := c.opts.Rand.Uint64()
		for j := 0; j < 8; j++ {
			t.id[i+j] = byte(v >> (8 * j))
		}
	}
	c.writeAssignment(t)
	c.logf("topic %s had no topic id: wrote %s", t.name, encodeTopicID(t.id))
}

// onBrokers compares the registrations with the live brokers (Kafka's
// processBrokerChange): failures first (dead, and bounced as dead), then
// startups (new, and bounced as new), then modified registrations.
func (c *Controller) onBrokers(list []Broker) {
	cur := map[int32]*Broker{}
	for i := range list {
		b := list[i]
		if old := cur[b.ID]; old == nil || b.Epoch > old.Epoch {
			cur[b.ID] = &b
		}
	}
	var dead, bounced, born, modified []int32
	for _, id := range c.sortedBrokerIDs() {
		nb := cur[id]
		switch old := c.brokers[id]; {
		case nb == nil:
			dead = append(dead, id)
		case nb.Epoch > old.Epoch:
			bounced = append(bounced, id)
		case nb.Epoch == old.Epoch && !nb.equal(old):
			modified = append(modified, id)
		case nb.Epoch < old.Epoch:
			c.logf("ignoring registration of broker %d with epoch %d below the known %d", id, nb.Epoch, old.Epoch)
		}
	}
	for id := range cur {
		if c.brokers[id] == nil {
			born = append(born, id)
		}
	}
	slices.Sort(born)
	if failed := append(slices.Clone(dead), bounced...); len(failed) > 0 {
		slices.Sort(failed)
		c.logf("brokers failed: dead %v, bounced %v", dead, bounced)
		c.brokerFailure(failed)
	}
	if started := append(slices.Clone(born), bounced...); len(started) > 0 {
		slices.Sort(started)
		for _, id := range started {
			c.brokers[id] = cur[id]
		}
		c.logf("brokers started: new %v, bounced %v", born, bounced)
		c.brokerStartup(started)
	}
	if len(modified) > 0 {
		for _, id := range modified {
			c.brokers[id] = cur[id]
		}
		c.rb.umAll = true
	}
}

// brokerFailure is Kafka's onBrokerFailure: the brokers' partitions whose
// leader is no longer online are re-elected, then the dead replicas leave
// the ISRs; every live broker hears of it.
func (c *Controller) brokerFailure(ids []int32) {
	for _, id := range ids {
		delete(c.brokers, id)
		delete(c.shuttingDown, id)
		delete(c.offlineDirs, id)
		for rid, a := range c.awaiting {
			if a.broker == id {
				delete(c.awaiting, rid)
			}
		}
	}
	c.deletionBrokersFailed(ids)
	c.triggerOnline(nil)
	c.shrinkDead()
	c.rb.umAll = true
}

// brokerStartup is Kafka's onBrokerStartup: the others learn of the new
// brokers, the new ones get the full metadata and the state of each of
// their replicas, offline partitions are elected, deletions waiting for
// them resume.
func (c *Controller) brokerStartup(ids []int32) {
	c.rb.umAll = true
	if c.rb.umFull == nil {
		c.rb.umFull = map[int32]bool{}
	}
	for _, id := range ids {
		c.rb.umFull[id] = true
	}
	for _, name := range c.names {
		t := c.topics[name]
		if t.deleting {
			continue
		}
		for p := range t.parts {
			part := &t.parts[p]
			if !part.hasState {
				continue
			}
			for _, r := range part.replicas {
				if slices.Contains(ids, r) {
					c.addLeaderAndISR([]int32{r}, TopicPartition{name, int32(p)}, false)
				}
			}
		}
	}
	c.triggerOnline(nil)
	c.deletionBrokersStarted(ids)
}
