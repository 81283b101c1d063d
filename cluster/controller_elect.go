package cluster

import (
	"fmt"
	"slices"
)

// Leader elections (Kafka's Election.scala) and ISR removals (Kafka's
// OfflineReplica transition). Each changes the controller's view, queues
// the state znode write and the LeaderAndIsr/UpdateMetadata that follow it.

// offlineElection is Election.leaderForOffline: the first replica in
// assignment order that is online and in the ISR leads, with the online
// members of the old ISR; with none, and unclean election enabled for the
// topic, the first online replica leads alone.
func (c *Controller) offlineElection(t *ctopic, p int32, allowUnclean bool) (st PartitionState, ok, unclean bool) {
	part := &t.parts[p]
	tp := TopicPartition{t.name, p}
	leader := NoLeader
	for _, r := range part.replicas {
		if c.online(r, tp) && slices.Contains(part.st.ISR, r) {
			leader = r
			break
		}
	}
	if leader == NoLeader && allowUnclean {
		for _, r := range part.replicas {
			if c.online(r, tp) {
				leader, unclean = r, true
				break
			}
		}
	}
	if leader == NoLeader {
		return part.st, false, false
	}
	st = PartitionState{Leader: leader, LeaderEpoch: part.st.LeaderEpoch + 1}
	if unclean {
		st.ISR = []int32{leader}
	} else {
		for _, r := range part.st.ISR {
			if c.online(r, tp) && slices.Contains(part.replicas, r) {
				st.ISR = append(st.ISR, r)
			}
		}
	}
	return st, true, unclean
}

// needsElection: a partition without a state znode (new), or whose leader
// is none or not online.
func (c *Controller) needsElection(t *ctopic, p int32) bool {
	part := &t.parts[p]
	return !part.hasState || part.st.Leader == NoLeader || !c.online(part.st.Leader, TopicPartition{t.name, p})
}

// triggerOnline elects leaders for every new or offline partition (of
// topic only, when not nil) of the topics not being deleted (Kafka's
// triggerOnlinePartitionStateChange).
func (c *Controller) triggerOnline(only *ctopic) {
	for _, name := range c.names {
		t := c.topics[name]
		if t.deleting || (only != nil && t != only) {
			continue
		}
		for p := range t.parts {
			if c.needsElection(t, int32(p)) {
				c.electOffline(t, int32(p))
			}
		}
	}
}

// electOffline brings a new or offline partition online if it can, unclean
// if the topic allows it.
func (c *Controller) electOffline(t *ctopic, p int32) bool {
	return c.electOfflineUnclean(t, p, t.unclean(c.opts.UncleanLeaderElectionEnable))
}

func (c *Controller) electOfflineUnclean(t *ctopic, p int32, allowUnclean bool) bool {
	part := &t.parts[p]
	tp := TopicPartition{t.name, p}
	if !part.hasState {
		// New partition: the first online replica leads, the online
		// replicas are the ISR, leader epoch 0.
		var isr []int32
		for _, r := range part.replicas {
			if c.online(r, tp) {
				isr = append(isr, r)
			}
		}
		if len(isr) == 0 {
			c.logf("new partition %s-%d: no assigned replica %v is online", t.name, p, part.replicas)
			return false
		}
		c.writeState(t, p, PartitionState{Leader: isr[0], ISR: isr})
		c.addLeaderAndISR(part.replicas, tp, true)
		return true
	}
	st, ok, unclean := c.offlineElection(t, p, allowUnclean)
	if !ok {
		return false
	}
	if unclean {
		c.logf("unclean leader election for %s-%d: %d leads outside the ISR %v (leader epoch %d); records only the ISR had are lost",
			t.name, p, st.Leader, part.st.ISR, st.LeaderEpoch)
	}
	c.writeState(t, p, st)
	c.addLeaderAndISR(part.replicas, tp, false)
	c.offlineElected++
	if c.opts.OnElection != nil {
		c.opts.OnElection(unclean)
	}
	return true
}

// shrinkISR drops the replicas gone reports from a partition's ISR, as
// Kafka's OfflineReplica transition does one replica at a time (in id
// order): a removed leader leaves the partition leaderless (-1), and the
// last ISR member stays. One write, with leader epoch + 1, if anything
// changed. LeaderAndIsr goes to the other live replicas.
func (c *Controller) shrinkISR(t *ctopic, p int32, gone func(b int32) bool) bool {
	part := &t.parts[p]
	if !part.hasState {
		return false
	}
	st := part.st.clone()
	removed := sortedMatching(st.ISR, gone)
	changed := false
	for _, b := range removed {
		if st.Leader == b {
			st.Leader = NoLeader
			changed = true
		}
		if len(st.ISR) > 1 {
			st.ISR = slices.DeleteFunc(st.ISR, func(r int32) bool { return r == b })
			changed = true
		}
	}
	if !changed {
		return false
	}
	st.LeaderEpoch++
	c.writeState(t, p, st)
	var to []int32
	for _, r := range part.replicas {
		if !gone(r) {
			to = append(to, r)
		}
	}
	c.addLeaderAndISR(to, TopicPartition{t.name, p}, false)
	return true
}

func sortedMatching(ids []int32, f func(int32) bool) []int32 {
	var out []int32
	for _, id := range ids {
		if f(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// shrinkDead drops brokers that are not live from every ISR of topics not
// being deleted.
func (c *Controller) shrinkDead() {
	dead := func(b int32) bool { return !c.live(b) }
	for _, name := range c.names {
		t := c.topics[name]
		if t.deleting {
			continue
		}
		for p := range t.parts {
			c.shrinkISR(t, int32(p), dead)
		}
	}
}

// preferredElection is Election.leaderForPreferredReplica: the first
// assigned replica, if online and in the ISR; the ISR is kept.
func (c *Controller) preferredElection(t *ctopic, p int32) (PartitionState, bool) {
	part := &t.parts[p]
	if !part.hasState || len(part.replicas) == 0 {
		return PartitionState{}, false
	}
	pref := part.replicas[0]
	if !c.online(pref, TopicPartition{t.name, p}) || !slices.Contains(part.st.ISR, pref) {
		return PartitionState{}, false
	}
	st := part.st.clone()
	st.Leader = pref
	st.LeaderEpoch++
	return st, true
}

// electPreferred moves leadership to the preferred replica if it can.
func (c *Controller) electPreferred(t *ctopic, p int32) bool {
	st, ok := c.preferredElection(t, p)
	if !ok {
		return false
	}
	c.writeState(t, p, st)
	c.addLeaderAndISR(t.parts[p].replicas, TopicPartition{t.name, p}, false)
	return true
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }
