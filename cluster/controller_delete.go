package cluster

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic deletion (Kafka's TopicDeletionManager): every live broker is told
// the topic's partitions have leader -2, every replica gets StopReplica
// (delete=false) then StopReplica (delete=true); when every replica
// answered the second without error, the topic's znodes are deleted.
// Replicas on dead brokers, and those that answered with an error, wait
// until their broker (re)starts.

type deletion struct {
	status map[replicaKey]delStatus
}

type replicaKey struct{ p, b int32 }

type delStatus int

const (
	delPending  delStatus = iota // to be sent when the broker is live
	delInflight                  // StopReplica (delete) sent
	delDone                      // deleted
	delFailed                    // failed or broker died: retried when it starts
)

// onDeletions takes the children of /admin/delete_topics.
func (c *Controller) onDeletions(names []string) {
	c.markDeletions(names)
	c.resumeDeletions()
}

// markDeletions queues the listed topics for deletion, and removes the
// requests for unknown topics (or all, when delete.topic.enable is false).
func (c *Controller) markDeletions(names []string) {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		t := c.topics[name]
		if t == nil || !c.opts.DeleteTopicEnable {
			if _, ok := c.tombstones[name]; ok && t == nil {
				continue // deleted with its topic; a stale read
			}
			if !c.adminDeleted[name] {
				c.adminDeleted[name] = true
				c.addOp(Op{Kind: OpDelete, Path: ctrlDeleteTopicPath(name), Version: -1}, -1)
				if t == nil {
					c.logf("deletion of unknown topic %s requested: removing the request", name)
				} else {
					c.logf("deletion of topic %s requested, but delete.topic.enable is false: removing the request", name)
				}
			}
			continue
		}
		t.deleteNode = true
		if !t.deleting {
			t.deleting = true
			c.logf("deleting topic %s", name)
		}
	}
	for name := range c.adminDeleted {
		if _, ok := slices.BinarySearch(names, name); !ok {
			delete(c.adminDeleted, name)
		}
	}
}

// resumeDeletions starts the deletions not started, sends StopReplica to
// the pending replicas on live brokers, and completes the deletions whose
// replicas are all deleted.
func (c *Controller) resumeDeletions() {
	var send []TopicPartition
	var sendTo []int32
	var complete []*ctopic
	for _, name := range c.names {
		t := c.topics[name]
		if !t.deleting {
			continue
		}
		if t.del == nil {
			t.del = &deletion{status: map[replicaKey]delStatus{}}
			for p := range t.parts {
				tp := TopicPartition{name, int32(p)}
				if t.parts[p].hasState {
					c.addUpdateMetadata(tp)
				}
				for _, r := range t.parts[p].replicas {
					t.del.status[replicaKey{int32(p), r}] = delPending
				}
			}
		}
		done := true
		for p := range t.parts {
			for _, r := range t.parts[p].replicas {
				k := replicaKey{int32(p), r}
				switch t.del.status[k] {
				case delPending:
					if c.live(r) {
						send = append(send, TopicPartition{name, int32(p)})
						sendTo = append(sendTo, r)
						t.del.status[k] = delInflight
					}
					done = false
				case delInflight, delFailed:
					done = false
				}
			}
		}
		if done {
			complete = append(complete, t)
		}
	}
	if len(send) > 0 {
		for i, tp := range send {
			c.addStopReplica(sendTo[i], tp, false)
		}
		c.flushRequests()
		for i, tp := range send {
			c.addStopReplica(sendTo[i], tp, true)
		}
		c.flushRequests()
	}
	for _, t := range complete {
		c.completeDeletion(t)
	}
}

// completeDeletion deletes the topic's znodes, children first (Kafka's
// deleteTopicZNode, deleteTopicConfigs, deleteTopicDeletions) and forgets
// the topic.
func (c *Controller) completeDeletion(t *ctopic) {
	del := func(path string) { c.addOp(Op{Kind: OpDelete, Path: path, Version: -1}, -1) }
	for p := range t.parts {
		if t.parts[p].hasState {
			del(ctrlStatePath(t.name, int32(p)))
		}
		if t.parts[p].node {
			del(ctrlPartitionPath(t.name, int32(p)))
		}
	}
	for _, n := range t.extraNodes {
		del(n)
	}
	if t.partitionsNode {
		del(ctrlPartitionsPath(t.name))
	}
	del(ctrlTopicPath(t.name))
	if t.configs != nil {
		del(ctrlTopicConfigPath(t.name))
	}
	if t.deleteNode {
		del(ctrlDeleteTopicPath(t.name))
	}
	c.logf("deleted topic %s", t.name)
	c.tombstones[t.name] = t.id
	c.removeTopic(t.name)
}

// deletionBrokersFailed marks replicas on failed brokers as failed.
func (c *Controller) deletionBrokersFailed(ids []int32) {
	c.setDeletionStatus(ids, func(s delStatus) bool { return s == delInflight || s == delPending }, delFailed)
}

// deletionBrokersStarted retries the failed replicas on started brokers.
func (c *Controller) deletionBrokersStarted(ids []int32) {
	c.setDeletionStatus(ids, func(s delStatus) bool { return s == delFailed }, delPending)
	c.resumeDeletions()
}

func (c *Controller) setDeletionStatus(ids []int32, from func(delStatus) bool, to delStatus) {
	for _, name := range c.names {
		t := c.topics[name]
		if t.del == nil {
			continue
		}
		for k, s := range t.del.status {
			if slices.Contains(ids, k.b) && from(s) {
				t.del.status[k] = to
			}
		}
	}
}

// stopDeleteResult takes broker b's answer to a StopReplica (delete).
func (c *Controller) stopDeleteResult(a awaitReq, resp *kmsg.StopReplicaResponse, err error) {
	failed := err != nil || resp == nil || resp.ErrorCode != 0
	for _, tp := range a.tps {
		t := c.topics[tp.Topic]
		if t == nil || t.del == nil {
			continue
		}
		k := replicaKey{tp.Partition, a.broker}
		if t.del.status[k] != delInflight {
			continue
		}
		st := delFailed
		if !failed {
			st = delPending // not in the response: send again
			for _, p := range resp.Partitions {
				if p.Topic == tp.Topic && p.Partition == tp.Partition {
					st = delDone
					if p.ErrorCode != 0 {
						st = delFailed
						c.logf("broker %d failed to delete %s: error %d", a.broker, tp, p.ErrorCode)
					}
				}
			}
		}
		t.del.status[k] = st
	}
	c.resumeDeletions()
}
