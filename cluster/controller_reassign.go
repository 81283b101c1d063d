package cluster

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partition reassignment (KIP-455, as Kafka 2.8's ZooKeeper-mode
// controller does it). While partition p moves from its origin replicas
// (ORS) to a target (TRS), its assignment in /brokers/topics/T is the full
// set RS = (TRS ++ ORS) without repeats, with adding_replicas = RS - ORS
// and removing_replicas = RS - TRS. That znode is the only record of the
// reassignment, so a controller that takes over resumes it.
//
//   - Start: RS, adding and removing written; replicas of an earlier
//     reassignment no longer in RS leave the ISR and get StopReplica
//     (delete=true). Unless TRS is already in the ISR: leader epoch + 1
//     and LeaderAndIsr to RS (is_new for the adding replicas), so the
//     leader and the new followers learn RS.
//   - Progress: each ISR change (AlterPartition), and each activation,
//     checks completion: TRS within the ISR.
//   - Completion: if the leader is not in TRS or not online, the first TRS
//     replica online and in the ISR leads; the removing replicas leave the
//     ISR; one state write (leader epoch + 1) and the assignment TRS
//     written with it; LeaderAndIsr to TRS, UpdateMetadata to all,
//     StopReplica (delete=true) to the removed replicas.
//   - Cancel (AlterPartitionReassignments with replicas null): a
//     reassignment to ORS, which completes at once when ORS is in the ISR;
//     the adding replicas are stopped and deleted.

// AlterReassignments is an AlterPartitionReassignments (key 45, v0)
// request; the answer is a Reply with the same ID carrying
// *kmsg.AlterPartitionAssignmentsResponse.
type AlterReassignments struct {
	ID  uint64
	Req *kmsg.AlterPartitionAssignmentsRequest
}

// ListReassignments is a ListPartitionReassignments (key 46, v0) request;
// the answer is a Reply with the same ID carrying
// *kmsg.ListPartitionReassignmentsResponse.
type ListReassignments struct {
	ID  uint64
	Req *kmsg.ListPartitionReassignmentsRequest
}

func (AlterReassignments) event() {}
func (ListReassignments) event()  {}

const (
	errInvalidReplicaAssignment int16 = 39
	errNoReassignmentInProgress int16 = 85
)

func (p *cpart) reassigning() bool { return len(p.adding) > 0 || len(p.removing) > 0 }

// origin is ORS: the replicas without those being added.
func (p *cpart) origin() []int32 { return without(p.replicas, p.adding) }

// target is TRS: the replicas without those being removed.
func (p *cpart) target() []int32 { return without(p.replicas, p.removing) }

// without returns a's members not in b, in a's order.
func without(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func subset(a, b []int32) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// onAlterReassignments starts or cancels reassignments; per partition:
// UNKNOWN_TOPIC_OR_PARTITION (also for a topic being deleted),
// NO_REASSIGNMENT_IN_PROGRESS for a cancel of none, INVALID_REPLICA_ASSIGNMENT
// for an empty list, a repeated or negative broker id, or an added
// replica on a broker that is not live; else NONE and the reassignment
// starts (replacing one in progress).
func (c *Controller) onAlterReassignments(e AlterReassignments) {
	req := e.Req
	notController := func() kmsg.Response {
		r := kmsg.NewPtrAlterPartitionAssignmentsResponse()
		r.Version = req.Version
		r.ErrorCode = errNotController
		return r
	}
	if !c.active {
		c.outReplies = append(c.outReplies, Reply{ID: e.ID, Msg: notController()})
		return
	}
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	resp.Version = req.Version
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			op.Partition = rp.Partition
			code, msg := c.reassignOne(rt.Topic, rp.Partition, rp.Replicas)
			op.ErrorCode = code
			if msg != "" {
				op.ErrorMessage = &msg
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	c.flushRequests()
	c.hold(heldOut{reply: &Reply{ID: e.ID, Msg: resp}, notController: notController})
}

func (c *Controller) reassignOne(name string, p int32, replicas []int32) (int16, string) {
	t := c.topics[name]
	if t == nil || p < 0 || int(p) >= len(t.parts) {
		return errUnknownTopicOrPartition, ""
	}
	if t.deleting {
		return errUnknownTopicOrPartition, fmt.Sprintf("topic %s is being deleted", name)
	}
	part := &t.parts[p]
	var target []int32
	if replicas == nil {
		if !part.reassigning() {
			return errNoReassignmentInProgress, fmt.Sprintf("no reassignment of %s-%d is in progress", name, p)
		}
		target = part.origin()
	} else {
		if len(replicas) == 0 {
			return errInvalidReplicaAssignment, "empty replica list"
		}
		for i, r := range replicas {
			if r < 0 {
				return errInvalidReplicaAssignment, fmt.Sprintf("invalid broker id %d in replica list %v", r, replicas)
			}
			if slices.Contains(replicas[:i], r) {
				return errInvalidReplicaAssignment, fmt.Sprintf("duplicate replica id %d in replica list %v", r, replicas)
			}
		}
		for _, r := range without(replicas, part.origin()) {
			if !c.live(r) {
				return errInvalidReplicaAssignment, fmt.Sprintf("replica list %v names broker %d, which is not alive (live: %v)", replicas, r, c.sortedBrokerIDs())
			}
		}
		target = slices.Clone(replicas)
	}
	c.startReassignment(t, p, target)
	return 0, ""
}

// startReassignment is the first half of Kafka's onPartitionReassignment.
func (c *Controller) startReassignment(t *ctopic, p int32, target []int32) {
	part := &t.parts[p]
	tp := TopicPartition{t.name, p}
	origin := part.origin()
	rs := slices.Clone(target)
	for _, r := range origin {
		if !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	unneeded := without(part.replicas, rs)
	part.replicas, part.adding, part.removing = rs, without(rs, origin), without(rs, target)
	c.logf("reassigning %s: replicas %v, adding %v, removing %v", tp, part.replicas, part.adding, part.removing)
	c.writeAssignment(t)
	if len(unneeded) > 0 {
		c.dropReplicas(t, p, unneeded)
	}
	if part.reassigning() && c.reassignProgress(t, p) {
		return
	}
	if !part.reassigning() {
		c.zkReassignDone(tp)
	}
	// In progress, or nothing to move (a reorder, a cancel of replicas
	// not yet added): the replicas learn the new assignment.
	if part.hasState {
		st := part.st.clone()
		st.LeaderEpoch++
		c.writeState(t, p, st)
	}
	c.addLeaderAndISR(part.adding, tp, true)
	c.addLeaderAndISR(without(part.replicas, part.adding), tp, false)
}

// reassignProgress completes partition p's reassignment if its target
// replicas are all in the ISR; it tells whether it did.
func (c *Controller) reassignProgress(t *ctopic, p int32) bool {
	part := &t.parts[p]
	tp := TopicPartition{t.name, p}
	target := part.target()
	if !part.reassigning() || !part.hasState || !subset(target, part.st.ISR) {
		return false
	}
	st := part.st.clone()
	if !slices.Contains(target, st.Leader) || !c.online(st.Leader, tp) {
		st.Leader = NoLeader
		for _, r := range target {
			if c.online(r, tp) && slices.Contains(st.ISR, r) {
				st.Leader = r
				break
			}
		}
		if st.Leader == NoLeader {
			c.logf("reassignment of %s waits: no target replica %v is online", tp, target)
			return false
		}
	}
	removed := part.removing
	st.ISR = without(st.ISR, removed)
	st.LeaderEpoch++
	c.writeState(t, p, st)
	part.replicas, part.adding, part.removing = target, nil, nil
	c.writeAssignment(t)
	c.addLeaderAndISR(target, tp, false)
	for _, b := range removed {
		c.addStopReplica(b, tp, true)
	}
	c.logf("reassignment of %s complete: replicas %v", tp, target)
	c.zkReassignDone(tp)
	return true
}

// dropReplicas takes replicas no longer assigned out of the ISR and
// deletes them (StopReplica delete=true).
func (c *Controller) dropReplicas(t *ctopic, p int32, gone []int32) {
	c.shrinkISR(t, p, func(b int32) bool { return slices.Contains(gone, b) })
	for _, b := range gone {
		c.addStopReplica(b, TopicPartition{t.name, p}, true)
	}
}

// resumeReassignments completes, at activation, the reassignments whose
// targets joined the ISR while no controller watched.
func (c *Controller) resumeReassignments() {
	for _, name := range c.names {
		t := c.topics[name]
		if t.deleting {
			continue
		}
		for p := range t.parts {
			if t.parts[p].reassigning() {
				c.reassignProgress(t, int32(p))
			}
		}
	}
}

// writeAssignment writes /brokers/topics/T with the reassignments in
// progress.
func (c *Controller) writeAssignment(t *ctopic) {
	a := TopicAssignment{TopicID: t.id, Partitions: make(map[int32][]int32, len(t.parts)),
		Adding: map[int32][]int32{}, Removing: map[int32][]int32{}}
	for p := range t.parts {
		part := &t.parts[p]
		a.Partitions[int32(p)] = part.replicas
		if part.reassigning() {
			a.Adding[int32(p)] = nonNil(part.adding)
			a.Removing[int32(p)] = nonNil(part.removing)
		}
	}
	c.addOp(Op{Kind: OpSet, Path: ctrlTopicPath(t.name), Data: a.Encode(), Version: t.version}, t.version+1)
	t.version++
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// onListReassignments lists the reassignments in progress: of every
// topic (topics null) or of the partitions named.
func (c *Controller) onListReassignments(e ListReassignments) {
	req := e.Req
	notController := func() kmsg.Response {
		r := kmsg.NewPtrListPartitionReassignmentsResponse()
		r.Version = req.Version
		r.ErrorCode = errNotController
		return r
	}
	if !c.active {
		c.outReplies = append(c.outReplies, Reply{ID: e.ID, Msg: notController()})
		return
	}
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	resp.Version = req.Version
	add := func(t *ctopic, p int32) {
		if t == nil || p < 0 || int(p) >= len(t.parts) || !t.parts[p].reassigning() {
			return
		}
		part := &t.parts[p]
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != t.name {
			ot := kmsg.NewListPartitionReassignmentsResponseTopic()
			ot.Topic = t.name
			resp.Topics = append(resp.Topics, ot)
		}
		ot := &resp.Topics[len(resp.Topics)-1]
		op := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		op.Partition = p
		op.Replicas = slices.Clone(part.replicas)
		op.AddingReplicas = nonNil(slices.Clone(part.adding))
		op.RemovingReplicas = nonNil(slices.Clone(part.removing))
		ot.Partitions = append(ot.Partitions, op)
	}
	if req.Topics == nil {
		for _, name := range c.names {
			for p := range c.topics[name].parts {
				add(c.topics[name], int32(p))
			}
		}
	} else {
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				add(c.topics[rt.Topic], p)
			}
		}
	}
	c.hold(heldOut{reply: &Reply{ID: e.ID, Msg: resp}, notController: notController})
}
