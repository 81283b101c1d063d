package cluster

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// onLogDirEvents is Kafka's processLogDirEventNotification: each new
// notification znode is deleted and its broker gets LeaderAndIsr for all
// its replicas; the replicas it answers KAFKA_STORAGE_ERROR for go offline
// (onRequestResult).
func (c *Controller) onLogDirEvents(events []LogDirEvent) {
	events = slices.Clone(events)
	slices.SortFunc(events, func(a, b LogDirEvent) int {
		if a.Node < b.Node {
			return -1
		} else if a.Node > b.Node {
			return 1
		}
		return 0
	})
	listed := map[string]bool{}
	var brokers []int32
	for _, ev := range events {
		listed[ev.Node] = true
		if c.logDirDone[ev.Node] {
			continue
		}
		c.logDirDone[ev.Node] = true
		c.addOp(Op{Kind: OpDelete, Path: ctrlLogDirEventPath(ev.Node), Version: -1}, -1)
		if !slices.Contains(brokers, ev.Broker) {
			brokers = append(brokers, ev.Broker)
		}
	}
	for node := range c.logDirDone {
		if !listed[node] {
			delete(c.logDirDone, node)
		}
	}
	sortInt32s(brokers)
	for _, b := range brokers {
		if !c.live(b) {
			continue
		}
		c.logf("broker %d reported a log dir failure", b)
		for _, name := range c.names {
			t := c.topics[name]
			if t.deleting {
				continue
			}
			for p := range t.parts {
				if t.parts[p].hasState && slices.Contains(t.parts[p].replicas, b) {
					c.addLeaderAndISR([]int32{b}, TopicPartition{name, int32(p)}, false)
				}
			}
		}
	}
}

// onRequestResult reads the responses the controller waits for.
func (c *Controller) onRequestResult(r RequestResult) {
	a, ok := c.awaiting[r.Request]
	if !ok {
		return
	}
	delete(c.awaiting, r.Request)
	if b := c.brokers[a.broker]; b == nil || b.Epoch != a.epoch {
		return // the broker died or bounced since
	}
	switch a.kind {
	case awaitStopDelete:
		resp, _ := r.Resp.(*kmsg.StopReplicaResponse)
		c.stopDeleteResult(a, resp, r.Err)
	case awaitLeaderAndISR:
		resp, _ := r.Resp.(*kmsg.LeaderAndISRResponse)
		if r.Err != nil || resp == nil || resp.ErrorCode != 0 {
			return
		}
		c.leaderAndISRResult(a.broker, resp)
	}
}

// leaderAndISRResult is Kafka's handling of a LeaderAndIsr response:
// partitions answered KAFKA_STORAGE_ERROR are on a failed log dir (offline
// until the broker restarts), those answered NONE are online again. Newly
// offline replicas are Kafka's onReplicasBecomeOffline: offline partitions
// are elected, the replicas get StopReplica (delete=false) and leave the
// ISRs.
func (c *Controller) leaderAndISRResult(b int32, resp *kmsg.LeaderAndISRResponse) {
	var newly []TopicPartition
	mark := func(tp TopicPartition, code int16) {
		t := c.topics[tp.Topic]
		if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.parts) {
			return
		}
		m := c.offlineDirs[b]
		switch code {
		case errKafkaStorage:
			if m == nil {
				m = map[TopicPartition]bool{}
				c.offlineDirs[b] = m
			}
			if !m[tp] {
				m[tp] = true
				newly = append(newly, tp)
			}
		case 0:
			delete(m, tp)
		}
	}
	for _, p := range resp.Partitions { // v0-v4
		mark(TopicPartition{p.Topic, p.Partition}, p.ErrorCode)
	}
	for _, rt := range resp.Topics { // v5+
		t := c.topicByID(rt.TopicID)
		if t == nil {
			continue
		}
		for _, p := range rt.Partitions {
			mark(TopicPartition{t.name, p.Partition}, p.ErrorCode)
		}
	}
	if len(newly) == 0 {
		return
	}
	slices.SortFunc(newly, compareTP)
	c.logf("broker %d: replicas on a failed log dir: %v", b, newly)
	c.triggerOnline(nil)
	gone := func(r int32) bool { return r == b }
	for _, tp := range newly {
		t := c.topics[tp.Topic]
		if t.deleting {
			continue
		}
		c.addStopReplica(b, tp, false)
		c.shrinkISR(t, tp.Partition, gone)
	}
	c.rb.umAll = true
}

func sortInt32s(s []int32) { slices.Sort(s) }
