package cluster

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reqBatch collects the control requests one step decides (Kafka's
// ControllerBrokerRequestBatch); flushRequests turns it into one request
// per kind and broker, carrying the partition states as they are at the
// end of the step.
type reqBatch struct {
	lisr    map[int32]map[TopicPartition]bool // broker -> partition -> is_new
	umParts map[TopicPartition]bool           // partitions every live broker is told
	umAll   bool                              // every live broker gets an UpdateMetadata, even without partitions
	umFull  map[int32]bool                    // brokers told every partition
	stop    map[int32]map[TopicPartition]bool // broker -> partition -> delete
}

// heldOut is a request or reply waiting for the write batch after.
type heldOut struct {
	after         uint64
	req           *Request
	reply         *Reply
	notController func() kmsg.Response
}

type awaitKind int

const (
	awaitLeaderAndISR awaitKind = iota + 1
	awaitStopDelete
)

// awaitReq is a request whose response the controller reads.
type awaitReq struct {
	kind   awaitKind
	broker int32
	epoch  int64
	tps    []TopicPartition // StopReplica: the partitions it deletes
}

// addLeaderAndISR sends partition tp's state to brokers (those not live
// are skipped), and UpdateMetadata for it to every live broker.
func (c *Controller) addLeaderAndISR(brokers []int32, tp TopicPartition, isNew bool) {
	for _, b := range brokers {
		if !c.live(b) {
			continue
		}
		markTP(&c.rb.lisr, b, tp, isNew)
	}
	c.addUpdateMetadata(tp)
}

// addUpdateMetadata tells every live broker partition tp's state.
func (c *Controller) addUpdateMetadata(tp TopicPartition) {
	if c.rb.umParts == nil {
		c.rb.umParts = map[TopicPartition]bool{}
	}
	c.rb.umParts[tp] = true
}

// addStopReplica asks broker b to stop its replica of tp, and to delete it
// when del.
func (c *Controller) addStopReplica(b int32, tp TopicPartition, del bool) {
	if !c.live(b) {
		return
	}
	markTP(&c.rb.stop, b, tp, del)
}

// markTP adds tp to broker b's set in *per (made as needed), its flag set
// once any call sets it (LeaderAndIsr's is-new, StopReplica's delete).
func markTP(per *map[int32]map[TopicPartition]bool, b int32, tp TopicPartition, flag bool) {
	if *per == nil {
		*per = map[int32]map[TopicPartition]bool{}
	}
	m := (*per)[b]
	if m == nil {
		m = map[TopicPartition]bool{}
		(*per)[b] = m
	}
	m[tp] = m[tp] || flag
}

// hold queues an output behind every write batch cut so far: it is
// released once they are all acknowledged.
func (c *Controller) hold(h heldOut) {
	c.cutWrites()
	h.after = c.lastBatch
	c.held = append(c.held, h)
	c.release()
}

// release hands out the held outputs whose batches are all acknowledged:
// every batch before the oldest one in flight.
func (c *Controller) release() {
	done := c.lastBatch
	if len(c.inflight) > 0 {
		done = c.inflight[0].id - 1
	}
	n := 0
	for _, h := range c.held {
		if h.after > done {
			break
		}
		if h.req != nil {
			c.outReqs = append(c.outReqs, *h.req)
		} else {
			c.outReplies = append(c.outReplies, *h.reply)
		}
		n++
	}
	c.held = c.held[n:]
}

// flushRequests turns the step's reqBatch into requests, per broker in id
// order: LeaderAndIsr, then UpdateMetadata, then StopReplica (Kafka's
// order). Pending writes are cut first, so the requests wait for them.
func (c *Controller) flushRequests() {
	c.cutWrites()
	rb := c.rb
	c.rb = reqBatch{}
	if rb.lisr == nil && rb.umParts == nil && !rb.umAll && rb.umFull == nil && rb.stop == nil {
		return
	}
	var all []TopicPartition // every partition with a state, for full UpdateMetadata
	if rb.umFull != nil {
		for _, name := range c.names {
			t := c.topics[name]
			for p := range t.parts {
				if t.parts[p].hasState {
					all = append(all, TopicPartition{name, int32(p)})
				}
			}
		}
	}
	umParts := sortedTPs(rb.umParts)
	for _, b := range c.sortedBrokerIDs() {
		if m := rb.lisr[b]; len(m) > 0 {
			c.send(b, c.leaderAndISR(b, m), awaitReq{kind: awaitLeaderAndISR})
		}
		switch {
		case rb.umFull[b]:
			c.send(b, c.updateMetadata(b, all), awaitReq{})
		case rb.umAll || len(umParts) > 0:
			c.send(b, c.updateMetadata(b, umParts), awaitReq{})
		}
		if m := rb.stop[b]; len(m) > 0 {
			req, deleted := c.stopReplica(b, m)
			a := awaitReq{}
			if len(deleted) > 0 {
				a = awaitReq{kind: awaitStopDelete, tps: deleted}
			}
			c.send(b, req, a)
		}
	}
}

func (c *Controller) send(b int32, msg kmsg.Request, a awaitReq) {
	c.nextReq++
	if a.kind != 0 {
		a.broker, a.epoch = b, c.brokers[b].Epoch
		c.awaiting[c.nextReq] = a
	}
	c.hold(heldOut{req: &Request{ID: c.nextReq, Broker: b, Msg: msg}})
}

func sortedTPs(m map[TopicPartition]bool) []TopicPartition {
	out := make([]TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	slices.SortFunc(out, compareTP)
	return out
}

func compareTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

func (c *Controller) leaderAndISR(b int32, parts map[TopicPartition]bool) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = LeaderAndISRVersion
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch
	req.BrokerEpoch = c.brokers[b].Epoch
	var leaders []int32
	for _, tp := range sortedTPs(parts) {
		t := c.topics[tp.Topic]
		if t == nil || !t.parts[tp.Partition].hasState {
			continue
		}
		part := &t.parts[tp.Partition]
		if n := len(req.TopicStates); n == 0 || req.TopicStates[n-1].Topic != tp.Topic {
			ts := kmsg.NewLeaderAndISRRequestTopicState()
			ts.Topic, ts.TopicID = t.name, t.id
			req.TopicStates = append(req.TopicStates, ts)
		}
		ts := &req.TopicStates[len(req.TopicStates)-1]
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Partition = tp.Partition
		ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion, ps.Replicas = part.wireState()
		ps.IsNew = parts[tp]
		ps.AddingReplicas, ps.RemovingReplicas = part.adding, part.removing
		ts.PartitionStates = append(ts.PartitionStates, ps)
		if part.st.Leader >= 0 && !slices.Contains(leaders, part.st.Leader) {
			leaders = append(leaders, part.st.Leader)
		}
	}
	slices.Sort(leaders)
	for _, id := range leaders {
		lb := c.brokers[id]
		if lb == nil {
			continue
		}
		ep := c.interBrokerEndpoint(lb)
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		l.BrokerID, l.Host, l.Port = id, ep.Host, ep.Port
		req.LiveLeaders = append(req.LiveLeaders, l)
	}
	return req
}

// wireState is the partition's state as LeaderAndIsr and UpdateMetadata
// carry it: controller epoch, leader, leader epoch, ISR, znode version and
// replicas.
func (p *cpart) wireState() (controllerEpoch, leader, leaderEpoch int32, isr []int32, zkVersion int32, replicas []int32) {
	return p.st.ControllerEpoch, p.st.Leader, p.st.LeaderEpoch, p.st.ISR, p.st.Version, p.replicas
}

func (c *Controller) interBrokerEndpoint(b *Broker) Endpoint {
	for _, e := range b.Endpoints {
		if e.Listener == c.opts.InterBrokerListener {
			return e
		}
	}
	if len(b.Endpoints) > 0 {
		return b.Endpoints[0]
	}
	return Endpoint{}
}

func (c *Controller) updateMetadata(b int32, parts []TopicPartition) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = UpdateMetadataVersion
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch
	req.BrokerEpoch = c.brokers[b].Epoch
	for _, tp := range parts {
		t := c.topics[tp.Topic]
		if t == nil || int(tp.Partition) >= len(t.parts) || !t.parts[tp.Partition].hasState {
			continue
		}
		part := &t.parts[tp.Partition]
		if n := len(req.TopicStates); n == 0 || req.TopicStates[n-1].Topic != tp.Topic {
			ts := kmsg.NewUpdateMetadataRequestTopicState()
			ts.Topic, ts.TopicID = t.name, t.id
			req.TopicStates = append(req.TopicStates, ts)
		}
		ts := &req.TopicStates[len(req.TopicStates)-1]
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Partition = tp.Partition
		ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZKVersion, ps.Replicas = part.wireState()
		if t.deleting {
			ps.Leader = LeaderDuringDelete
		}
		for _, r := range part.replicas {
			if !c.online(r, tp) {
				ps.OfflineReplicas = append(ps.OfflineReplicas, r)
			}
		}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	for _, id := range c.sortedBrokerIDs() {
		br := c.brokers[id]
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		for _, e := range br.Endpoints {
			ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
			ep.Port, ep.Host, ep.ListenerName, ep.SecurityProtocol = e.Port, e.Host, e.Listener, e.SecurityProtocol
			lb.Endpoints = append(lb.Endpoints, ep)
		}
		if br.Rack != "" {
			rack := br.Rack
			lb.Rack = &rack
		}
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	return req
}

// stopReplica builds broker b's StopReplica and lists the partitions it
// deletes.
func (c *Controller) stopReplica(b int32, parts map[TopicPartition]bool) (*kmsg.StopReplicaRequest, []TopicPartition) {
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version = StopReplicaVersion
	req.ControllerID = c.id
	req.ControllerEpoch = c.epoch
	req.BrokerEpoch = c.brokers[b].Epoch
	var deleted []TopicPartition
	for _, tp := range sortedTPs(parts) {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
			ts := kmsg.NewStopReplicaRequestTopic()
			ts.Topic = tp.Topic
			req.Topics = append(req.Topics, ts)
		}
		ts := &req.Topics[len(req.Topics)-1]
		ps := kmsg.NewStopReplicaRequestTopicPartitionState()
		ps.Partition = tp.Partition
		ps.Delete = parts[tp]
		if ps.Delete {
			deleted = append(deleted, tp)
		}
		ps.LeaderEpoch = NoLeader
		if t := c.topics[tp.Topic]; t != nil {
			switch {
			case t.deleting:
				ps.LeaderEpoch = epochDuringDelete
			case int(tp.Partition) < len(t.parts) && t.parts[tp.Partition].hasState:
				ps.LeaderEpoch = t.parts[tp.Partition].st.LeaderEpoch
			}
		}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	return req, deleted
}
