package cluster

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// onControlledShutdown is Kafka's doControlledShutdown. The broker must be
// live (else BROKER_NOT_AVAILABLE) and its broker epoch, unless -1 (v0-v1),
// not older than the registration's (else STALE_BROKER_EPOCH). It is then
// shutting down: no election picks it, and for each partition of a topic
// not being deleted with more than one replica, it leads elsewhere if a
// live ISR member not shutting down can take over (the ISR loses the
// brokers shutting down), and where it follows it gets StopReplica
// (delete=false) and leaves the ISR. The answer, held until those writes
// are acknowledged, lists every partition it still leads.
func (c *Controller) onControlledShutdown(e ControlledShutdown) {
	req := e.Req
	version := req.Version
	newResp := func(code int16) *kmsg.ControlledShutdownResponse {
		r := kmsg.NewPtrControlledShutdownResponse()
		r.Version = version
		r.ErrorCode = code
		return r
	}
	notController := func() kmsg.Response { return newResp(errNotController) }
	if !c.active {
		c.outReplies = append(c.outReplies, Reply{ID: e.ID, Msg: notController()})
		return
	}
	id := req.BrokerID
	b := c.brokers[id]
	switch {
	case b == nil:
		c.hold(heldOut{reply: &Reply{ID: e.ID, Msg: newResp(errBrokerNotAvailable)}, notController: notController})
		return
	case req.BrokerEpoch != -1 && req.BrokerEpoch < b.Epoch:
		c.hold(heldOut{reply: &Reply{ID: e.ID, Msg: newResp(errStaleBrokerEpoch)}, notController: notController})
		return
	}
	if !c.shuttingDown[id] {
		c.logf("broker %d is shutting down", id)
	}
	c.shuttingDown[id] = true
	follows := func(r int32) bool { return r == id }
	for _, name := range c.names {
		t := c.topics[name]
		if t.deleting {
			continue
		}
		for p := range t.parts {
			part := &t.parts[p]
			if !part.hasState || len(part.replicas) < 2 || !slices.Contains(part.replicas, id) {
				continue
			}
			tp := TopicPartition{name, int32(p)}
			if part.st.Leader == id {
				if st, ok := c.shutdownElection(t, int32(p)); ok {
					c.writeState(t, int32(p), st)
					c.addLeaderAndISR(part.replicas, tp, false)
				}
				continue
			}
			c.addStopReplica(id, tp, false)
			c.shrinkISR(t, int32(p), follows)
		}
	}
	resp := newResp(0)
	for _, name := range c.names {
		t := c.topics[name]
		for p := range t.parts {
			if t.parts[p].hasState && t.parts[p].st.Leader == id {
				r := kmsg.NewControlledShutdownResponsePartitionsRemaining()
				r.Topic, r.Partition = name, int32(p)
				resp.PartitionsRemaining = append(resp.PartitionsRemaining, r)
			}
		}
	}
	c.flushRequests()
	c.hold(heldOut{reply: &Reply{ID: e.ID, Msg: resp}, notController: notController})
}

// shutdownElection is Election.leaderForControlledShutdown: the first
// replica that is live (log dir included), in the ISR and not shutting
// down leads; the ISR loses the brokers shutting down.
func (c *Controller) shutdownElection(t *ctopic, p int32) (PartitionState, bool) {
	part := &t.parts[p]
	tp := TopicPartition{t.name, p}
	for _, r := range part.replicas {
		if c.live(r) && !c.offlineDirs[r][tp] && !c.shuttingDown[r] && slices.Contains(part.st.ISR, r) {
			st := PartitionState{Leader: r, LeaderEpoch: part.st.LeaderEpoch + 1}
			for _, m := range part.st.ISR {
				if !c.shuttingDown[m] {
					st.ISR = append(st.ISR, m)
				}
			}
			return st, true
		}
	}
	return PartitionState{}, false
}
