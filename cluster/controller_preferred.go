package cluster

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// onElectLeaders is Kafka's processReplicaLeaderElection for ElectLeaders
// (key 43): preferred (type 0; v0 is always preferred) or unclean
// (type 1), for the listed partitions or, with topics null, all of them.
// Per partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION for a
// topic being deleted, ELECTION_NOT_NEEDED when the preferred replica
// already leads (preferred) or a live leader exists (unclean),
// PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when no
// replica qualifies, else NONE and the new state is written.
func (c *Controller) onElectLeaders(e ElectLeaders) {
	req := e.Req
	version := req.Version
	notController := func() kmsg.Response {
		r := kmsg.NewPtrElectLeadersResponse()
		r.Version = version
		r.ErrorCode = errNotController
		if version == 0 { // no top-level error: per partition
			for _, rt := range req.Topics {
				ot := kmsg.NewElectLeadersResponseTopic()
				ot.Topic = rt.Topic
				for _, p := range rt.Partitions {
					op := kmsg.NewElectLeadersResponseTopicPartition()
					op.Partition, op.ErrorCode = p, errNotController
					ot.Partitions = append(ot.Partitions, op)
				}
				r.Topics = append(r.Topics, ot)
			}
		}
		return r
	}
	if !c.active {
		c.outReplies = append(c.outReplies, Reply{ID: e.ID, Msg: notController()})
		return
	}
	unclean := version >= 1 && req.ElectionType == 1
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.Version = version
	topics := req.Topics
	if topics == nil {
		for _, name := range c.names {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = name
			for p := range c.topics[name].parts {
				rt.Partitions = append(rt.Partitions, int32(p))
			}
			topics = append(topics, rt)
		}
	}
	for _, rt := range topics {
		ot := kmsg.NewElectLeadersResponseTopic()
		ot.Topic = rt.Topic
		t := c.topics[rt.Topic]
		for _, p := range rt.Partitions {
			op := kmsg.NewElectLeadersResponseTopicPartition()
			op.Partition = p
			code, msg := c.electOne(t, p, unclean)
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

func (c *Controller) electOne(t *ctopic, p int32, unclean bool) (int16, string) {
	if t == nil || p < 0 || int(p) >= len(t.parts) {
		return errUnknownTopicOrPartition, ""
	}
	if t.deleting {
		return errInvalidTopic, fmt.Sprintf("deletion of topic %s is in progress", t.name)
	}
	part := &t.parts[p]
	if !unclean {
		if part.hasState && len(part.replicas) > 0 && part.st.Leader == part.replicas[0] {
			return errElectionNotNeeded, ""
		}
		if !c.electPreferred(t, p) {
			return errPreferredLeaderUnavailable, fmt.Sprintf("preferred replica of %s-%d is not online and in the ISR", t.name, p)
		}
		return 0, ""
	}
	if part.hasState && part.st.Leader != NoLeader && c.online(part.st.Leader, TopicPartition{t.name, p}) {
		return errElectionNotNeeded, ""
	}
	if !c.electOfflineUnclean(t, p, true) {
		return errEligibleLeadersUnavailable, fmt.Sprintf("no replica of %s-%d is online", t.name, p)
	}
	return 0, ""
}

// onRebalanceTick is Kafka's checkAndTriggerAutoLeaderRebalance: for each
// broker that is the preferred replica of some partitions, if the share of
// them it does not lead exceeds leader.imbalance.per.broker.percentage,
// it takes back those where it is online and in the ISR.
func (c *Controller) onRebalanceTick() {
	type prefs struct{ all, notLed []TopicPartition }
	by := map[int32]*prefs{}
	var ids []int32
	for _, name := range c.names {
		t := c.topics[name]
		if t.deleting {
			continue
		}
		for p := range t.parts {
			part := &t.parts[p]
			if !part.hasState || len(part.replicas) == 0 {
				continue
			}
			pref := part.replicas[0]
			s := by[pref]
			if s == nil {
				s = &prefs{}
				by[pref] = s
				ids = append(ids, pref)
			}
			tp := TopicPartition{name, int32(p)}
			s.all = append(s.all, tp)
			if part.st.Leader != pref {
				s.notLed = append(s.notLed, tp)
			}
		}
	}
	sortInt32s(ids)
	for _, b := range ids {
		s := by[b]
		if len(s.notLed)*100 <= c.opts.LeaderImbalancePerBrokerPercentage*len(s.all) {
			continue
		}
		for _, tp := range s.notLed {
			c.electPreferred(c.topics[tp.Topic], tp.Partition)
		}
	}
}
