package cluster

import (
	"slices"
)

// /admin/reassign_partitions, Kafka's reassignment request before KIP-455
// (still read by Kafka 2.8's controller): {"version":1,"partitions":
// [{"topic":"t","partition":0,"replicas":[1,2,3]}]}. The controller acts
// on each partition listed as on an AlterPartitionReassignments entry; a
// refused one (unknown partition, bad replica list) is logged and taken
// out of the znode, as is each reassignment once complete; the znode is
// deleted when none is left. A partition already being moved to the same
// replicas (a controller taking over) is only remembered.

// ReassignZnode carries /admin/reassign_partitions as read after its
// watch fired (or at activation): Exists false when it is absent, Err set
// when it does not decode.
type ReassignZnode struct {
	Exists     bool
	Partitions []PartitionReplicas
	Err        error
}

func (ReassignZnode) event() {}

func (c *Controller) onReassignZnode(e ReassignZnode) {
	if !e.Exists {
		c.zkReassign = map[TopicPartition][]int32{}
		return
	}
	if e.Err != nil {
		c.logf("deleting %s: %v", ReassignPartitionsPath, e.Err)
		c.zkReassign = map[TopicPartition][]int32{}
		c.writeReassignZnode()
		return
	}
	changed := false
	for _, p := range e.Partitions {
		tp := TopicPartition{p.Topic, p.Partition}
		if cur, ok := c.zkReassign[tp]; ok && slices.Equal(cur, p.Replicas) {
			continue
		}
		if t := c.topics[p.Topic]; t != nil && !t.deleting && p.Partition >= 0 && int(p.Partition) < len(t.parts) {
			if part := &t.parts[p.Partition]; part.reassigning() && slices.Equal(part.target(), p.Replicas) {
				c.zkReassign[tp] = slices.Clone(p.Replicas)
				continue
			}
		}
		code, msg := c.reassignOne(p.Topic, p.Partition, p.Replicas)
		if code != 0 {
			c.logf("reassignment of %s in %s refused (error %d): %s", tp, ReassignPartitionsPath, code, msg)
			changed = true
			continue
		}
		if c.topics[p.Topic].parts[p.Partition].reassigning() {
			c.zkReassign[tp] = slices.Clone(p.Replicas)
		} else {
			changed = true // complete at once
		}
	}
	if changed {
		c.writeReassignZnode()
	}
}

// zkReassignDone takes a finished reassignment out of the znode.
func (c *Controller) zkReassignDone(tp TopicPartition) {
	if _, ok := c.zkReassign[tp]; !ok {
		return
	}
	delete(c.zkReassign, tp)
	c.writeReassignZnode()
}

// writeReassignZnode writes what is left of /admin/reassign_partitions,
// or deletes it when nothing is.
func (c *Controller) writeReassignZnode() {
	if len(c.zkReassign) == 0 {
		c.addOp(Op{Kind: OpDelete, Path: ReassignPartitionsPath, Version: -1}, -1)
		return
	}
	tps := make([]TopicPartition, 0, len(c.zkReassign))
	for tp := range c.zkReassign {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTP)
	ps := make([]PartitionReplicas, 0, len(tps))
	for _, tp := range tps {
		ps = append(ps, PartitionReplicas{Topic: tp.Topic, Partition: tp.Partition, Replicas: c.zkReassign[tp]})
	}
	c.addOp(Op{Kind: OpSet, Path: ReassignPartitionsPath, Data: EncodeReassignPartitions(ps), Version: -1}, -1)
}
